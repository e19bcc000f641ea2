# The layering of sim/ (sim/layers.cmake): no file includes a stage above its own, kernels/
# includes nothing of sim/, every file of sim/ is in a stage folder, and kernels/reference/ and
# the kernel bodies include nothing of each other. Run as a build step of
# every sim/ library and as the ctest `sim_layering`:
#   cmake -DROOT=<source tree> [-DSTAMP=<file to touch when it holds>] -P scripts/check_layers.cmake
cmake_minimum_required(VERSION 3.24)
if(NOT ROOT)
  message(FATAL_ERROR "check_layers: pass -DROOT=<source tree>")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/../sim/layers.cmake)

set(errors "")
list(JOIN DSPARK_SIM_STAGES ", " stages_text)
# Lines that name a sim/ header: #include "sim/...", and __has_include("sim/...").
set(include_regex "^[ \t]*#[ \t]*(include|if|elif).*\"sim/")

file(GLOB_RECURSE kernel_files ${ROOT}/kernels/*.h ${ROOT}/kernels/*.cc ${ROOT}/kernels/*.cuh ${ROOT}/kernels/*.cu)
foreach(f ${kernel_files})
  file(STRINGS ${f} hits REGEX "${include_regex}")
  foreach(line ${hits})
    file(RELATIVE_PATH rel ${ROOT} ${f})
    string(APPEND errors "  ${rel}: kernels/ is below sim/, but it includes: ${line}\n")
  endforeach()
endforeach()

# kernels/reference/ is the independent truth: of kernels/ it may include only itself and the
# batch types (kernels/batch.h), never a kernel, the suite or the emulator; and no kernel body
# (kernels/ outside reference/ and suite/, the check harness) includes a reference. A relative
# include ("../x.h") would step around both rules, so none is allowed under kernels/.
set(kernel_include_regex "^[ \t]*#[ \t]*(include|if|elif).*\"(kernels/|\\.\\./)")
foreach(f ${kernel_files})
  file(RELATIVE_PATH rel ${ROOT} ${f})
  file(STRINGS ${f} hits REGEX "${kernel_include_regex}")
  foreach(line ${hits})
    string(REGEX MATCHALL "\"[^\"]*\"" names "${line}")
    foreach(name ${names})
      if(name MATCHES "^\"\\.\\./")
        string(APPEND errors "  ${rel}: a relative include ${name}: name the file from the tree's root\n")
      elseif(rel MATCHES "^kernels/reference/")
        if(NOT name MATCHES "^\"kernels/(reference/[^\"]*|batch\\.h)\"$")
          string(APPEND errors "  ${rel}: kernels/reference/ may include of kernels/ only kernels/reference/ and "
                               "kernels/batch.h (the references share no code with what they check), but it includes ${name}\n")
        endif()
      elseif(NOT rel MATCHES "^kernels/suite/" AND name MATCHES "^\"kernels/reference/")
        string(APPEND errors "  ${rel}: a kernel body includes ${name}; only the check harness (kernels/suite/) "
                             "compares with the references\n")
      endif()
    endforeach()
  endforeach()
endforeach()

file(GLOB loose ${ROOT}/sim/*.h ${ROOT}/sim/*.cc ${ROOT}/sim/*.cuh ${ROOT}/sim/*.cu)
foreach(f ${loose})
  file(RELATIVE_PATH rel ${ROOT} ${f})
  string(APPEND errors "  ${rel}: not in a stage folder (sim/<stage>/, stages: ${stages_text})\n")
endforeach()

file(GLOB folders LIST_DIRECTORIES true ${ROOT}/sim/*)
foreach(folder ${folders})
  if(NOT IS_DIRECTORY ${folder})
    continue()
  endif()
  get_filename_component(stage ${folder} NAME)
  if(NOT stage IN_LIST DSPARK_SIM_STAGES)
    string(APPEND errors "  sim/${stage}/: not a stage of sim/layers.cmake (stages: ${stages_text})\n")
    continue()
  endif()
  dspark_sim_stage_closure(${stage} allowed)
  list(JOIN allowed ", " allowed_text)
  file(GLOB_RECURSE files ${folder}/*.h ${folder}/*.cc ${folder}/*.cuh ${folder}/*.cu)
  foreach(f ${files})
    file(RELATIVE_PATH rel ${ROOT} ${f})
    file(STRINGS ${f} hits REGEX "${include_regex}")
    foreach(line ${hits})
      string(REGEX MATCHALL "\"sim/[^\"]*\"" names "${line}")
      foreach(name ${names})
        if(name MATCHES "^\"sim/([a-z_0-9]+)/")
          set(to ${CMAKE_MATCH_1})
          if(NOT to IN_LIST allowed)
            string(APPEND errors "  ${rel}: stage ${stage} includes ${name} of stage ${to}, which is not below it "
                                 "(${stage} may include: ${allowed_text})\n")
          endif()
        else()
          string(APPEND errors "  ${rel}: includes ${name}, which is in no stage folder\n")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()

if(errors)
  message(FATAL_ERROR "check_layers: wrong-way includes in ${ROOT} (the layering is sim/layers.cmake):\n${errors}")
endif()
if(STAMP)
  file(TOUCH ${STAMP})
endif()
