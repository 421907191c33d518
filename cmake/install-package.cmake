# Run by `cmake --install` (see CMakeLists.txt): writes convcache.pc, the
# CMake package config and convcache_install.h for the prefix being
# installed to, from the same templates `make install` uses (convcache.pc.in,
# cmake/*.in, through mk/install-header.sh for the header), then runs
# ldconfig or says what to do, as `make install` does (mk/ldconfig.sh).
#
# In: CMAKE_INSTALL_PREFIX (the install-time prefix), CONVCACHE_SOURCE_DIR,
# CONVCACHE_BINARY_DIR, CONVCACHE_VERSION, CONVCACHE_VERSION_MAJOR,
# CONVCACHE_INSTALL_LIBDIR, CONVCACHE_INSTALL_INCLUDEDIR.

foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CONVCACHE_INSTALL_${_dir}}")
    set(_full_${_dir} "${CONVCACHE_INSTALL_${_dir}}")
  else()
    set(_full_${_dir} "${CMAKE_INSTALL_PREFIX}/${CONVCACHE_INSTALL_${_dir}}")
  endif()
endforeach()

# convcache.pc.in's names.
set(PREFIX "${CMAKE_INSTALL_PREFIX}")
set(LIBDIR "${_full_LIBDIR}")
set(INCDIR "${_full_INCLUDEDIR}")
set(VERSION "${CONVCACHE_VERSION}")
execute_process(COMMAND sh "${CONVCACHE_SOURCE_DIR}/mk/ldconfig.sh" pc-rpath "${_full_LIBDIR}"
                OUTPUT_VARIABLE RPATH)
# cmake/convcacheConfig.cmake.in's names.
set(CONVCACHE_LIBDIR "${_full_LIBDIR}")
set(CONVCACHE_INCDIR "${_full_INCLUDEDIR}")

set(_out "${CONVCACHE_BINARY_DIR}/install-package")
configure_file("${CONVCACHE_SOURCE_DIR}/convcache.pc.in" "${_out}/convcache.pc" @ONLY)
configure_file("${CONVCACHE_SOURCE_DIR}/cmake/convcacheConfig.cmake.in" "${_out}/convcacheConfig.cmake" @ONLY)
configure_file("${CONVCACHE_SOURCE_DIR}/cmake/convcacheConfigVersion.cmake.in"
               "${_out}/convcacheConfigVersion.cmake" @ONLY)

execute_process(COMMAND sh "${CONVCACHE_SOURCE_DIR}/mk/install-header.sh" "${_full_LIBDIR}"
                        "${CONVCACHE_SOURCE_DIR}/cmake/convcache_install.h.in"
                OUTPUT_FILE "${_out}/convcache_install.h" RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "convcache: mk/install-header.sh failed")
endif()

file(INSTALL DESTINATION "${_full_INCLUDEDIR}" TYPE FILE FILES "${_out}/convcache_install.h")
file(INSTALL DESTINATION "${_full_LIBDIR}/pkgconfig" TYPE FILE FILES "${_out}/convcache.pc")
file(INSTALL DESTINATION "${_full_LIBDIR}/cmake/convcache" TYPE FILE
     FILES "${_out}/convcacheConfig.cmake" "${_out}/convcacheConfigVersion.cmake")

# Last, once every file is in place (this script is the last install rule).
execute_process(COMMAND sh "${CONVCACHE_SOURCE_DIR}/mk/ldconfig.sh" after-install "${_full_LIBDIR}" "$ENV{DESTDIR}")
