// libtorch_like.so: tests/v8fe/torch_like (PyTorch's default convolution
// path on the real cudnn_frontend) as a library linked to the stand-in
// cuDNN, as libtorch_cuda.so is linked to cuDNN, so that a Python process
// can load it after convcache.enable() (bench/gpu/enable_run.py --lib: the
// enable-default part of make gpu-check on the stand-ins). Its entry point
// is torch_like_main(argc, argv), torch_like's main.
#include "torch_conv.hpp"

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define main torch_like_main_cxx
#include "torch_like.cpp"
#undef main

extern "C" __attribute__((visibility("default"))) int torch_like_main(int argc, char **argv) {
    return torch_like_main_cxx(argc, argv);
}
