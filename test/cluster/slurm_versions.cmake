# Every test that talks to a live Slurm runs once per Slurm generation (issue 23): registered as
# <name>_22_05, <name>_24_11 and <name>_26_05 with ONEQUEUE_SLURM set, which test/common's
# SlurmClusterEnvironment hands to test/cluster/slurm-up.sh (docs/local-slurm.md).
#   oq_slurm_test(NAME LABEL l TIMEOUT s SOURCES ... LIBS ...): one binary, one ctest per Slurm.
#   oq_slurm_versions(NAME TIMEOUT s LABEL l): the same for a binary another call built.
#   NEWER_ENV "K=V": extra environment for the versions after 22.05 only (a binary whose other parts
#   do not talk to Slurm runs just its Slurm part there; it prints what it skips).
# 24.11 and 26.05 run from Debian root filesystems that test/cluster/slurm-rootfs.sh builds once and
# caches: the ctest fixture slurm_rootfs_<suffix> builds it before the first test that needs it (a
# second run finds it cached in a second).
include_guard(GLOBAL)
set(ONEQUEUE_SLURM_VERSIONS 22.05 24.11 26.05 CACHE STRING "Slurm versions every Slurm-facing test runs on")

function(oq_slurm_versions name)
  cmake_parse_arguments(T "" "LABEL;TIMEOUT;NEWER_ENV" "" ${ARGN})
  foreach(version ${ONEQUEUE_SLURM_VERSIONS})
    string(REPLACE "." "_" suffix ${version})
    add_test(NAME ${name}_${suffix} COMMAND ${name} --gtest_color=no)
    set(env "ONEQUEUE_SOURCE_DIR=${PROJECT_SOURCE_DIR};ONEQUEUE_BINARY_DIR=${PROJECT_BINARY_DIR};ONEQUEUE_SLURM=${version}")
    if(T_NEWER_ENV AND NOT version STREQUAL "22.05")
      list(APPEND env "${T_NEWER_ENV}")
    endif()
    set_tests_properties(${name}_${suffix} PROPERTIES LABELS "${T_LABEL};slurm;slurm_${suffix}" TIMEOUT ${T_TIMEOUT}
      ENVIRONMENT "${env}")
    if(NOT version STREQUAL "22.05")
      get_property(have GLOBAL PROPERTY oq_slurm_rootfs_${suffix})
      if(NOT have)
        set_property(GLOBAL PROPERTY oq_slurm_rootfs_${suffix} TRUE)
        add_test(NAME slurm_rootfs_${suffix} COMMAND bash ${PROJECT_SOURCE_DIR}/test/cluster/slurm-rootfs.sh ${version})
        set_tests_properties(slurm_rootfs_${suffix} PROPERTIES LABELS "integration;slurm;slurm_${suffix}"
          TIMEOUT 900 FIXTURES_SETUP slurm_rootfs_${suffix})
      endif()
      set_tests_properties(${name}_${suffix} PROPERTIES FIXTURES_REQUIRED slurm_rootfs_${suffix})
    endif()
  endforeach()
endfunction()

function(oq_slurm_test name)
  cmake_parse_arguments(T "" "LABEL;TIMEOUT;NEWER_ENV" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock GTest::gtest_main)
  oq_slurm_versions(${name} LABEL ${T_LABEL} TIMEOUT ${T_TIMEOUT} NEWER_ENV "${T_NEWER_ENV}")
endfunction()
