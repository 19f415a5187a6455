# oneDNN (Debian's libdnnl-dev), found by its header and its library rather than by the package's
# own dnnl-config.cmake: that file asks for OpenCL's development files (for oneDNN's GPU runtime,
# which zerodp never uses) and stops the configure where they are missing, as they are when
# libdnnl-dev is installed without its recommended packages. libdnnl.so names its own runtime
# dependencies, OpenCL's loader among them, so linking it alone is whole.
#
# Defines zerodp::onednn (an imported library) and ZERODP_ONEDNN_FOUND where both are present.
if(NOT TARGET zerodp::onednn)
  find_path(ZERODP_ONEDNN_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
  find_library(ZERODP_ONEDNN_LIBRARY dnnl)
  if(ZERODP_ONEDNN_INCLUDE_DIR AND ZERODP_ONEDNN_LIBRARY)
    add_library(zerodp::onednn UNKNOWN IMPORTED)
    set_target_properties(zerodp::onednn PROPERTIES
      IMPORTED_LOCATION "${ZERODP_ONEDNN_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${ZERODP_ONEDNN_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${CMAKE_DL_LIBS}")
  endif()
endif()
if(TARGET zerodp::onednn)
  set(ZERODP_ONEDNN_FOUND TRUE)
else()
  set(ZERODP_ONEDNN_FOUND FALSE)
endif()
