# Included by test/queue/CMakeLists.txt when present (ask: `include(bench.cmake OPTIONAL)` beside
# fuzz.cmake): the replay speed benchmark. Not run by ctest; see docs/simulate.md for the command.
if(TARGET benchmark::benchmark)
  add_executable(replay_bench ${CMAKE_CURRENT_LIST_DIR}/replay_bench.cc)
  target_link_libraries(replay_bench PRIVATE onequeue_queue onequeue_scheduler_core benchmark::benchmark)
endif()
if(TARGET benchmark::benchmark)
  add_executable(preemption_bench ${CMAKE_CURRENT_LIST_DIR}/preemption_bench.cc)
  target_link_libraries(preemption_bench PRIVATE onequeue_queue benchmark::benchmark)
endif()
