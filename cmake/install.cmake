# `cmake --install <build> [--prefix <dir>]`: emmyc, libemmy (C++ API and C ABI), the public
# headers, the standard library, the Python module and a CMake package, so that another
# project does
#
#   find_package(emmy CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE emmy::emmy)
#
# The layout is fixed (lib/, not lib/<multiarch>): emmyc finds <prefix>/share/emmy/stdlib
# next to its bin/, and libemmy finds it next to its lib/.
#
#   <prefix>/bin/emmyc
#   <prefix>/lib/libemmy.so -> libemmy.so.<major> -> libemmy.so.<version>
#   <prefix>/lib/libantlr4-runtime.so.<v>     (when libemmy links the shared ANTLR runtime)
#   <prefix>/include/emmy/{emmy.hpp, emmy.h, version.hpp}
#   <prefix>/share/emmy/stdlib/*.emmy
#   <prefix>/share/emmy/python/emmy/
#   <prefix>/lib/cmake/emmy/{emmyConfig, emmyConfigVersion, emmyTargets*}.cmake
include(CMakePackageConfigHelpers)

set(EMMY_INSTALL_BINDIR bin)
set(EMMY_INSTALL_LIBDIR lib)
set(EMMY_INSTALL_INCLUDEDIR include)
set(EMMY_INSTALL_DATADIR share/emmy)
set(EMMY_INSTALL_CMAKEDIR ${EMMY_INSTALL_LIBDIR}/cmake/emmy)

# The installed emmyc and libemmy find each other and what lies beside libemmy in lib/ (and
# nothing of the build tree). libemmy's own ($ORIGIN, set beside the target) is kept.
set_target_properties(emmyc PROPERTIES INSTALL_RPATH "$ORIGIN/../${EMMY_INSTALL_LIBDIR}")
get_target_property(EMMY_LIB_INSTALL_RPATH emmy INSTALL_RPATH)
if(NOT EMMY_LIB_INSTALL_RPATH)
  set_target_properties(emmy PROPERTIES INSTALL_RPATH "$ORIGIN")
endif()
# emmy.hpp uses std::string_view: a consumer needs C++17 at least.
target_compile_features(emmy INTERFACE cxx_std_17)

install(TARGETS emmyc EXPORT emmyTargets
        RUNTIME DESTINATION ${EMMY_INSTALL_BINDIR})
install(TARGETS emmy EXPORT emmyTargets
        LIBRARY DESTINATION ${EMMY_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${EMMY_INSTALL_BINDIR}
        ARCHIVE DESTINATION ${EMMY_INSTALL_LIBDIR})  # include/ comes from emmy's INSTALL_INTERFACE

# libemmy links the shared ANTLR runtime (Debian's static one is not position-independent):
# it goes beside libemmy.so under its SONAME, so the prefix carried to another machine loads.
if(EMMY_ANTLR_SO_REAL AND EMMY_ANTLR_SONAME)
  install(FILES ${EMMY_ANTLR_SO_REAL} DESTINATION ${EMMY_INSTALL_LIBDIR} RENAME ${EMMY_ANTLR_SONAME})
endif()

install(FILES ${CMAKE_SOURCE_DIR}/include/emmy/emmy.hpp
              ${CMAKE_SOURCE_DIR}/include/emmy/emmy.h
              ${CMAKE_BINARY_DIR}/include/emmy/version.hpp
        DESTINATION ${EMMY_INSTALL_INCLUDEDIR}/emmy)

install(DIRECTORY ${CMAKE_SOURCE_DIR}/stdlib/
        DESTINATION ${EMMY_INSTALL_DATADIR}/stdlib
        FILES_MATCHING PATTERN "*.emmy")

# Whatever the package holds, less the bytecode caches.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/emmy
        DESTINATION ${EMMY_INSTALL_DATADIR}/python
        OPTIONAL
        PATTERN "__pycache__" EXCLUDE
        PATTERN "*.pyc" EXCLUDE)

install(EXPORT emmyTargets
        NAMESPACE emmy::
        DESTINATION ${EMMY_INSTALL_CMAKEDIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/emmyConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/cmake/emmyConfig.cmake
                              INSTALL_DESTINATION ${EMMY_INSTALL_CMAKEDIR}
                              PATH_VARS EMMY_INSTALL_INCLUDEDIR EMMY_INSTALL_DATADIR)
# 0.x: a minor version may break the API.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/emmyConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/emmyConfig.cmake
              ${CMAKE_BINARY_DIR}/cmake/emmyConfigVersion.cmake
        DESTINATION ${EMMY_INSTALL_CMAKEDIR})
