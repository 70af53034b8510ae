# Included right after llama.cpp's own project() (CMAKE_PROJECT_llama.cpp_INCLUDE, passed in CMAKE_ARGS by the
# Makefile's llama-cpp-python wheel build). llama-cpp-python's CMakeLists forces LLAMA_BUILD_COMMON ON in its
# cache, but the Python package never loads libllama-common (the CLI tools' helper library: argument parsing, chat
# templates with nlohmann/json, downloads through cpp-httplib), so a wheel for `llama_cpp.server` does not need it.
# A normal variable in llama.cpp's directory scope shadows the cached ON (option() leaves a normal variable alone,
# CMP0077): its 51 translation units, cpp-httplib's and its install rule drop out of the build.
set(LLAMA_BUILD_COMMON OFF)
