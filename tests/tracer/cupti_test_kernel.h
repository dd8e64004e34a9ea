// The test kernel of cupti_test_kernel.cu, callable from C++.
#pragma once

// Launches descent_test_fill_kernel(p, n, value) on `stream` (a
// cudaStream_t; nullptr: the default stream), 256 threads a block; returns
// cudaGetLastError() after the launch (0: cudaSuccess).
int descent_test_fill(float* p, int n, float value, void* stream);
