# Included by test/scheduler/CMakeLists.txt: fuzz targets for the daemon's inputs from users
# (issue 13 defect 9): the configuration file and a pod's onequeue.io/* annotations. A ctest unit
# test (label fuzz, bounded: corpus + 20,000 mutations) in the normal build; libFuzzer with
# ONEQUEUE_FUZZ.
oq_fuzz_target(scheduler_config_fuzz SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_config.cc
  LIBS onequeue_scheduler_core CORPUS ${CMAKE_CURRENT_LIST_DIR}/fuzz_corpus/config)
oq_fuzz_target(scheduler_annotations_fuzz SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_annotations.cc
  LIBS onequeue_scheduler_core nlohmann_json::nlohmann_json CORPUS ${CMAKE_CURRENT_LIST_DIR}/fuzz_corpus/annotations)
