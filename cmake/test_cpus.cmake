# The cores a test keeps busy, as ctest's resources: make test runs the release tests with a
# spec of one `cpus` slot per core ($(BUILD)/cpus.json, written by the Makefile) and one ctest
# job more than that. Each test takes a slot for each core it computes on (its PROCESSORS, at
# most two: the MPI runs), so no more tests compute at once than there are cores; the tests
# named as waiting (the cluster's, which mostly wait on shaped links and timeouts: 37 s of CPU
# in 87 s) take none and run in the extra job beside them, instead of holding a core idle.
# A ctest run without the spec (-j alone, the sanitizer builds) ignores the groups.
function(zerodp_claim_cpus)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    if(test IN_LIST ARGN)
      continue()
    endif()
    get_test_property(${test} PROCESSORS processors)
    if(NOT processors)
      set(processors 1)
    elseif(processors GREATER 2)
      set(processors 2)
    endif()
    set_tests_properties(${test} PROPERTIES RESOURCE_GROUPS cpus:${processors})
  endforeach()
endfunction()
