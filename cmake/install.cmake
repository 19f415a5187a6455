# What `make install` / `cmake --install` put where, as Debian lays a program out, and the three
# .debs (CPack) made from the same rules, split as Debian splits such software (docs/install.md).
# Paths are relative to the prefix: /usr/local for `make install`, /usr in the .debs. Each rule
# names its component, which is its package:
#  planner (zerodp)
#   bin/zerodp                                  the planner: plan and plot, no MPI, BLAS or Python
#   share/man/man1/zerodp.1.gz                  its man page
#   share/bash-completion/completions/zerodp    commands and flags, read from --help when asked
#   share/doc/zerodp/                           README.md, docs/, examples/, copyright, changelog
#  engine (zerodp-engine)
#   lib/zerodp/zerodp-engine                    every command; bin/zerodp runs it for train,
#                                               measure, eval, sample and export
#   share/doc/zerodp-engine/                    copyright, changelog
#  python (python3-zerodp)
#   lib/python3/dist-packages/zerodp*.so        import zerodp (python/CMakeLists.txt; under
#                                               /usr/local: lib/python3.X/dist-packages)
#   share/doc/python3-zerodp/                   copyright, changelog
# Before the build had zerodp-engine, bin/zerodp was every command and the planner's package
# held it alone; the rules below hold for either build.
include(GNUInstallDirs)

install(TARGETS zerodp RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT planner)
# lib/zerodp, not CMAKE_INSTALL_LIBDIR (lib/x86_64-linux-gnu under /usr): bin/zerodp looks for
# the engine in ../lib/zerodp/ (cli/frame/engine_exec.h), as Debian keeps a package's private
# programs in /usr/lib/<package>.
if(TARGET zerodp-engine)
  install(TARGETS zerodp-engine RUNTIME DESTINATION lib/zerodp COMPONENT engine)
endif()

# The man page, written as a man page by zerodp-man (cli/frame/man_page.h) from the commands it
# documents: their help's summaries and examples and every option, so it never lists a flag
# the program lacks.
set(ZERODP_MAN ${CMAKE_BINARY_DIR}/zerodp.1.gz)
add_custom_command(
  OUTPUT ${ZERODP_MAN}
  COMMAND sh -c "\"$1\" > \"$2.roff\" && gzip -9n < \"$2.roff\" > \"$2\"" make-man
          $<TARGET_FILE:zerodp-man> ${ZERODP_MAN}
  DEPENDS zerodp-man
  COMMENT "Writing the man page"
  VERBATIM)
add_custom_target(zerodp_man ALL DEPENDS ${ZERODP_MAN})
install(FILES ${ZERODP_MAN} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT planner)

install(FILES ${CMAKE_SOURCE_DIR}/packaging/zerodp.bash
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions RENAME zerodp
        COMPONENT planner)

install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/zerodp
        COMPONENT planner)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/zerodp/docs
        COMPONENT planner)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/examples/
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/zerodp/examples COMPONENT planner)

# Debian's version of the packages is packaging/changelog's latest entry: the upstream version
# (VERSION), a hyphen and the packaging's revision. A changelog behind VERSION is said here and
# fails tests/packaging/package.sh.
file(STRINGS ${CMAKE_SOURCE_DIR}/packaging/changelog ZERODP_CHANGELOG_HEAD LIMIT_COUNT 1)
if(NOT ZERODP_CHANGELOG_HEAD MATCHES "^zerodp \\(([^)]+)-([0-9][^-)]*)\\) ")
  message(FATAL_ERROR "packaging/changelog: its first line is not 'zerodp (VERSION-REVISION) ...'")
endif()
set(ZERODP_DEB_REVISION ${CMAKE_MATCH_2})
if(NOT CMAKE_MATCH_1 STREQUAL PROJECT_VERSION)
  message(WARNING "packaging/changelog's latest entry is ${CMAKE_MATCH_1}, VERSION is "
                  "${PROJECT_VERSION}: add an entry for ${PROJECT_VERSION}")
endif()
set(ZERODP_DEB_VERSION ${PROJECT_VERSION}-${ZERODP_DEB_REVISION})

# Each package's share/doc/<package>/ holds the copyright (machine-readable) and the changelog,
# compressed as Debian's tools do it (-9, and -n: no name or time, so the same bytes each build),
# and share/lintian/overrides/<package> the tags of lintian that do not apply to it.
set(ZERODP_CHANGELOG ${CMAKE_BINARY_DIR}/changelog.Debian.gz)
add_custom_command(
  OUTPUT ${ZERODP_CHANGELOG}
  COMMAND gzip -9n < ${CMAKE_SOURCE_DIR}/packaging/changelog > ${ZERODP_CHANGELOG}
  DEPENDS ${CMAKE_SOURCE_DIR}/packaging/changelog
  COMMENT "Compressing the packages' changelog"
  VERBATIM)
add_custom_target(zerodp_changelog ALL DEPENDS ${ZERODP_CHANGELOG})
set(ZERODP_PACKAGES planner zerodp)
if(TARGET zerodp-engine)
  list(APPEND ZERODP_PACKAGES engine zerodp-engine)
endif()
if(TARGET zerodp_python)
  list(APPEND ZERODP_PACKAGES python python3-zerodp)
endif()
set(ZERODP_COMPONENTS "")
while(ZERODP_PACKAGES)
  list(POP_FRONT ZERODP_PACKAGES component package)
  list(APPEND ZERODP_COMPONENTS ${component})
  install(FILES ${CMAKE_SOURCE_DIR}/packaging/copyright ${ZERODP_CHANGELOG}
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component})
  # lintian's overrides, each with the reason it does not apply to these packages.
  install(FILES ${CMAKE_SOURCE_DIR}/packaging/lintian-overrides
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides RENAME ${package}
          COMPONENT ${component})
endwhile()

# The .debs: `make deb` (cpack -G DEB in the build), one per component. Each depends on the
# shared libraries its files load, as dpkg-shlibdeps finds their packages, and on what the
# rules say it needs besides: the engine on the planner that runs it, the module on the
# python3 it is built for.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME zerodp)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_PACKAGE_RELEASE ${ZERODP_DEB_REVISION})
# No address of the project's is stated anywhere else; this one is the form lintian accepts.
set(CPACK_PACKAGE_CONTACT "zerodp maintainers <zerodp@users.noreply.github.com>")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${ZERODP_COMPONENTS})
# Staged with DESTDIR and the prefix /usr, so that the install rules see the prefix the packages
# have (the Python module's folder depends on it), whatever CMAKE_INSTALL_PREFIX the build has.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)

# Descriptions: the first line is the synopsis (under 80 columns, not naming the package), the
# rest the extended description, each line under 80 columns.
set(CPACK_DEBIAN_PLANNER_PACKAGE_NAME zerodp)
set(CPACK_DEBIAN_PLANNER_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PLANNER_DESCRIPTION
    "GPU memory and communication planner for ZeRO data parallelism
zerodp plans the memory each GPU holds and the bytes each sends under plain
data parallelism and ZeRO stages 1, 2 and 3 (DeepSpeed, FSDP), from a
parameter count, a published model or a Hugging Face config.json with a
DeepSpeed config, and prints which stage fits.

This package is the planner alone (plan and plot). The engine that trains
and measures a byte-level GPT with the same stages is zerodp-engine; the
Python module is python3-zerodp.")

set(CPACK_DEBIAN_ENGINE_PACKAGE_NAME zerodp-engine)
set(CPACK_DEBIAN_ENGINE_PACKAGE_SECTION science)
set(CPACK_DEBIAN_ENGINE_PACKAGE_DEPENDS "zerodp (= ${ZERODP_DEB_VERSION})")
set(CPACK_DEBIAN_ENGINE_DESCRIPTION
    "ZeRO data-parallel training engine, measuring what each rank holds
The engine of zerodp trains a byte-level GPT with ZeRO stages 0 to 3 over
threads or MPI processes (OpenMPI), measures the memory every rank holds and
the bytes it sends, and checks them against the planner's prediction.

zerodp runs it for its commands train, measure, eval, sample and export.")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-zerodp)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "${ZERODP_PYTHON_DEB_DEPENDS}")
set(CPACK_DEBIAN_PYTHON_DESCRIPTION
    "Python 3 module of the ZeRO memory and communication planner
import zerodp answers what zerodp plan --json answers, as a dict, in the
Python process: zerodp.plan() gives the memory and communication of each ZeRO
stage, zerodp.predict_peak() the engine's prediction of a run's peak, and
zerodp.list_models() and zerodp.list_gpus() the catalogues. It runs the
command line's own code, so its numbers and refusals are the command line's.")
include(CPack)
