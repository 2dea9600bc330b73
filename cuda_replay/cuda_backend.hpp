// The CUDA backend of the tiny model (cuda_backend.cu). Declared only in builds where CMake found
// nvcc (KVCHECK_HAVE_CUDA); other builds contain no CUDA symbol at all.
#pragma once

#include <memory>
#include <string>

#include "cuda_replay/backend.hpp"

namespace kvcheck::replay {

// Null with `why` set when the runtime finds no usable CUDA device.
std::unique_ptr<Backend> make_cuda_backend(std::string& why, BackendOptions options);

}  // namespace kvcheck::replay
