# zerodp_part(NAME [USES part...] [LIBS lib...] [PRIVATE_LIBS lib...])
#
# Builds src/NAME/*.cc (and its subfolders) as the static library zerodp_NAME.
#  Its public headers are include/zerodp/NAME/, each named after the source in src/NAME/ that
#  implements it. The folder is linked into a folder of the part's own
#  (build/parts/NAME/include/zerodp/NAME), which is all the part and its users see of
#  include/: a user sees the headers of the parts it links, no others.
#  USES          the parts below it that it may use (linked PUBLIC: their headers are part of
#                its interface).
#  LIBS          third-party libraries its public headers or users need (PUBLIC).
#  PRIVATE_LIBS  third-party libraries only its sources use.
# Its internal headers, src/NAME/..., are included as "NAME/x.h" by its own sources only.
function(zerodp_part name)
  cmake_parse_arguments(PART "" "" "USES;LIBS;PRIVATE_LIBS" ${ARGN})
  if(PART_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "zerodp_part(${name}): unknown arguments ${PART_UNPARSED_ARGUMENTS}")
  endif()
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${name}/*.cc)
  if(NOT ZERODP_MPI)
    list(FILTER sources EXCLUDE REGEX "/src/comm/mpi/")
  endif()
  set(target zerodp_${name})
  add_library(${target} STATIC ${sources})

  set(headers ${CMAKE_SOURCE_DIR}/include/zerodp/${name})
  if(NOT IS_DIRECTORY ${headers})
    message(FATAL_ERROR "part ${name}: no public headers in include/zerodp/${name}/")
  endif()
  set(public_dir ${CMAKE_BINARY_DIR}/parts/${name}/include)
  file(REMOVE_RECURSE ${public_dir})
  file(MAKE_DIRECTORY ${public_dir}/zerodp)
  file(CREATE_LINK ${headers} ${public_dir}/zerodp/${name} SYMBOLIC)
  set(internal_dir ${CMAKE_BINARY_DIR}/parts/${name}/internal)
  file(REMOVE_RECURSE ${internal_dir})
  file(MAKE_DIRECTORY ${internal_dir})
  file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${name} ${internal_dir}/${name} SYMBOLIC)

  target_include_directories(${target} PUBLIC ${public_dir} PRIVATE ${internal_dir})
  foreach(part IN LISTS PART_USES)
    target_link_libraries(${target} PUBLIC zerodp_${part})
  endforeach()
  target_link_libraries(${target} PUBLIC ${PART_LIBS} PRIVATE ${PART_PRIVATE_LIBS})
  set_property(GLOBAL APPEND PROPERTY ZERODP_PARTS ${name})
endfunction()
