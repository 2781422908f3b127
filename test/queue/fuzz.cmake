# Included by test/queue/CMakeLists.txt when present: the SWF parser's fuzz target (a ctest unit
# test in the normal build, a libFuzzer binary with `make fuzz`).
oq_fuzz_target(swf_fuzz SOURCES ${CMAKE_CURRENT_LIST_DIR}/swf_fuzz.cc LIBS onequeue_queue
  CORPUS ${CMAKE_CURRENT_LIST_DIR}/fuzz_corpus/swf)
