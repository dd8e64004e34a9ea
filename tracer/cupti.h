// The device's own clock on CUDA: CUPTI's activity records, joined to launches.
//
// See Note [Device activity from CUPTI] in cupti.cpp. Every function here is a
// no-op (and active() false) in a build without the CUDA toolkit, and where
// CUPTI cannot be used (no GPU, no libcupti, profiling not permitted): then
// launches still work, and the trace's metadata "device.timing" says why
// device timing is unavailable.
#pragma once

#include <cstdint>
#include <string>

namespace descent::trace::cupti {

// Whether CUPTI is collecting for the running recording.
bool active();
// Around one launch (floors/launch): the next external correlation id, pushed
// so that CUPTI tags the launch's records with it; 0 when not active. The
// floor-8 span records it as "correlation". `stream` is descent's id of the
// stream the work goes to: the device span's row is named by it (CUPTI
// numbers streams its own way: the default stream is its 7).
uint64_t push_correlation(int64_t stream = 0);
void pop_correlation();
// One line for the trace header: "cupti (kernels, memcpy, memset, runtime)"
// or "unavailable: <why>".
std::string status();

// Called by the tracer (tracer.cpp) only, under its control lock.
namespace detail {
// start(): enables CUPTI's activity kinds when a CUDA device is present, and
// reads CUPTI's clock beside now_ns()'s.
void on_start();
// stop() (final) and snapshot(), while tracing is still on: flushes CUPTI's
// buffers and records the device spans whose launch is known (at stop, all
// of them) through record_device_span.
void on_collect(bool final);
// stop(), after collecting: disables the activity kinds until the next start().
void on_stop();
// What the trace's metadata "device.timing" says: status() when this
// recording tried CUPTI (a CUDA device was present or CUPTI was refused), ""
// when it did not (no device, or a build without CUDA).
std::string timing_note();
}  // namespace detail

}  // namespace descent::trace::cupti
