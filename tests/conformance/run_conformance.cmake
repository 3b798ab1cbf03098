# Runs `modescope-cli conformance` on the generated node tests and checks its report:
# fails when the CLI could not run, when any case crashed (or hung), or when fewer cases passed
# than the floor for this mode in floor.json.
#   cmake -DCLI=... -DDATA=<dir with case folders> -DMODE=pynative|graph -DREPORT=<json>
#         -DFLOOR=<floor.json> -P run_conformance.cmake
cmake_minimum_required(VERSION 3.25)

foreach(var CLI DATA MODE REPORT FLOOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_conformance.cmake: -D${var}=... is required")
  endif()
endforeach()

file(REMOVE "${REPORT}")
execute_process(COMMAND "${CLI}" conformance "${DATA}" --mode "${MODE}" --report "${REPORT}"
                RESULT_VARIABLE cli_result)
if(NOT cli_result EQUAL 0)
  message(FATAL_ERROR "conformance (${MODE}): modescope-cli exited with '${cli_result}'")
endif()
if(NOT EXISTS "${REPORT}")
  message(FATAL_ERROR "conformance (${MODE}): no report written to ${REPORT}")
endif()

file(READ "${REPORT}" report)
file(READ "${FLOOR}" floor_json)
foreach(key passed failed skipped crashed)
  string(JSON ${key} ERROR_VARIABLE err GET "${report}" ${key})
  if(err)
    message(FATAL_ERROR "conformance (${MODE}): report has no '${key}': ${err}")
  endif()
endforeach()
string(JSON floor ERROR_VARIABLE err GET "${floor_json}" ${MODE})
if(err)
  message(FATAL_ERROR "conformance (${MODE}): ${FLOOR} has no '${MODE}' floor: ${err}")
endif()

message(STATUS "conformance (${MODE}): ${passed} passed, ${failed} failed, ${skipped} skipped, "
               "${crashed} crashed; floor ${floor}")

set(problems "")
if(crashed GREATER 0)
  # Name the crashed cases so the log says where to look.
  string(JSON ncases LENGTH "${report}" cases)
  set(names "")
  if(ncases GREATER 0)
    math(EXPR last "${ncases} - 1")
    foreach(i RANGE ${last})
      string(JSON status GET "${report}" cases ${i} status)
      if(status STREQUAL "crashed" OR status STREQUAL "timeout")
        string(JSON name GET "${report}" cases ${i} name)
        string(JSON msg GET "${report}" cases ${i} message)
        string(APPEND names "\n  ${name} (${status}): ${msg}")
      endif()
    endforeach()
  endif()
  string(APPEND problems "\n${crashed} case(s) crashed or timed out:${names}")
endif()
if(passed LESS floor)
  string(APPEND problems "\n${passed} passed is below the floor of ${floor} in ${FLOOR}")
endif()
if(problems)
  message(FATAL_ERROR "conformance (${MODE}) failed:${problems}")
endif()
