# Runs `modescope-cli conformance` on the generated node tests and checks its report:
# fails when the CLI could not run, when any case crashed (or hung), or when fewer cases passed
# than the floor for this mode in floor.json.
#   cmake -DCLI=... -DDATA=<dir with case folders> -DMODE=pynative|graph -DREPORT=<json>
#         -DFLOOR=<floor.json> [-DJIT_LEVEL=O0|O1|O2] [-DBASELINE=<pynative report>] -P run_conformance.cmake
# With BASELINE (when that report exists), every case passed there must pass here: no case may
# regress because of a compiler pass.
cmake_minimum_required(VERSION 3.25)

foreach(var CLI DATA MODE REPORT FLOOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_conformance.cmake: -D${var}=... is required")
  endif()
endforeach()

file(REMOVE "${REPORT}")
set(extra "")
if(DEFINED JIT_LEVEL)
  list(APPEND extra --jit-level "${JIT_LEVEL}")
endif()
if(DEFINED BASELINE)
  if(EXISTS "${BASELINE}")
    list(APPEND extra --baseline "${BASELINE}")
  else()
    message(STATUS "conformance (${MODE}): no baseline report at ${BASELINE} (run conformance_pynative first)")
  endif()
endif()
execute_process(COMMAND "${CLI}" conformance "${DATA}" --mode "${MODE}" --report "${REPORT}" ${extra}
                RESULT_VARIABLE cli_result)
# 0: ran clean; 3: a case crashed or timed out; 4: below a --floor (not passed here). The report is
# written in all three, and the checks below name the crashed cases and the floor: anything else
# means the CLI could not run.
if(NOT cli_result EQUAL 0 AND NOT cli_result EQUAL 3 AND NOT cli_result EQUAL 4)
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
string(JSON regressions ERROR_VARIABLE err GET "${report}" regressions)
if(NOT err AND regressions GREATER 0)
  string(JSON regressed ERROR_VARIABLE err GET "${report}" regressed_cases)
  string(APPEND problems "\n${regressions} case(s) pass in the baseline but not here: ${regressed}")
endif()
if(passed LESS floor)
  string(APPEND problems "\n${passed} passed is below the floor of ${floor} in ${FLOOR}")
endif()
if(problems)
  message(FATAL_ERROR "conformance (${MODE}) failed:${problems}")
endif()
