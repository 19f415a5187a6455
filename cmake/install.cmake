# What `make install` / `cmake --install` put where, as Debian lays a program out, and the .deb
# (CPack) made from the same rules (docs/install.md). Paths are relative to the prefix:
# /usr/local for `make install`, /usr in the .deb.
#   bin/zerodp                                  the program
#   share/man/man1/zerodp.1.gz                  its man page, made from its own --help
#   share/bash-completion/completions/zerodp    commands and flags, read from --help when asked
#   share/doc/zerodp/                           README.md, docs/, examples/ (DeepSpeed configs)
#   lib/python3/dist-packages/zerodp*.so        import zerodp (python/CMakeLists.txt; under
#                                               /usr/local: lib/python3.X/dist-packages)
include(GNUInstallDirs)

install(TARGETS zerodp RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT program)

set(ZERODP_MAN ${CMAKE_BINARY_DIR}/zerodp.1.gz)
add_custom_command(
  OUTPUT ${ZERODP_MAN}
  COMMAND ${CMAKE_SOURCE_DIR}/scripts/make-man.sh $<TARGET_FILE:zerodp> ${PROJECT_VERSION}
          | gzip -9n > ${ZERODP_MAN}
  DEPENDS zerodp ${CMAKE_SOURCE_DIR}/scripts/make-man.sh
  COMMENT "Writing the man page from zerodp's --help"
  VERBATIM)
add_custom_target(zerodp_man ALL DEPENDS ${ZERODP_MAN})
install(FILES ${ZERODP_MAN} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT program)

install(FILES ${CMAKE_SOURCE_DIR}/packaging/zerodp.bash
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions RENAME zerodp
        COMPONENT program)

set(ZERODP_DOC_DIR ${CMAKE_INSTALL_DATAROOTDIR}/doc/zerodp)
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${ZERODP_DOC_DIR} COMPONENT program)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${ZERODP_DOC_DIR}/docs COMPONENT program)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/examples/ DESTINATION ${ZERODP_DOC_DIR}/examples
        COMPONENT program)

# The .deb: `make deb` (cpack -G DEB in the build). Its dependencies are the shared libraries the
# program and the module load, as dpkg-shlibdeps finds their packages, and Debian's python3 of
# the version the module is built for.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME zerodp)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "zerodp maintainers <zerodp@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "ZeRO data parallelism: a GPU memory and communication planner and a sharded training engine")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "zerodp plans the memory each GPU holds and the bytes each sends under plain data
 parallelism and ZeRO stages 1, 2 and 3, from a parameter count, a published model or a
 Hugging Face config.json with a DeepSpeed config, and trains a byte-level GPT with stages
 0-3 over threads or MPI, measuring what every rank holds and sends. Includes the Python
 module (import zerodp).")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Staged with DESTDIR and the prefix /usr, so that the install rules see the prefix the package
# has (the Python module's folder depends on it), whatever CMAKE_INSTALL_PREFIX the build has.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
if(ZERODP_PYTHON)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "${ZERODP_PYTHON_DEB_DEPENDS}")
endif()
set(CPACK_DEB_COMPONENT_INSTALL OFF)
include(CPack)
