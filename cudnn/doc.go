// Package cudnn makes convcache a cuDNN cache: it fingerprints the CUDA
// device and libraries a benchmark result was measured on, and it decodes
// the keys and values that cuDNN users store, so that tools can show entries
// in human terms.
//
// # The fingerprint (scope)
//
// Probe reads, at run time and without linking either library, the GPU name,
// compute capability and multiprocessor count (libcuda.so.1, through
// cuDeviceGetName and cuDeviceGetAttribute), the driver's CUDA version
// (cuDriverGetVersion), and the cuDNN version and the CUDA runtime version
// cuDNN was built for (cudnnGetVersion, cudnnGetCudartVersion, from
// libcudnn.so.9, else libcudnn.so.8). A library the process already loaded
// is used in preference to loading one: the fingerprint describes the cuDNN
// that actually runs. CONVCACHE_CUDA_LIBRARY and CONVCACHE_CUDNN_LIBRARY name
// other files to load (for example a cuDNN inside a Python wheel).
//
// Scope turns that into the scope string, format cc1:
//
//	cc1;gpu=<name>;cc=<major>.<minor>;sms=<count>;driver=<cuDriverGetVersion>;cudnn=<cudnnGetVersion>;cudart=<cudnnGetCudartVersion>[;tag=<CONVCACHE_TAG>]
//
// for example
//
//	cc1;gpu=NVIDIA H100 80GB HBM3;cc=9.0;sms=132;driver=13000;cudnn=91300;cudart=13000
//
// Fields come in this fixed order, with decimal numbers as the libraries
// report them. In the GPU name, ';', '=' and control characters are replaced
// by '_', so no name can imitate another field. The tag, when
// CONVCACHE_TAG is set and not empty, comes last and verbatim: put the
// framework's version and git hash there. When CONVCACHE_SCOPE is set and not
// empty, Scope returns it unchanged instead, for every device. ScopeFor
// applies the same rule to a device already read, and Scopes to every
// device of the machine (Devices). A change to the format gets a new
// leading tag (cc2, ...), so entries written under one format are never
// read under another.
//
// The variables are read through package secenv: in a privileged process
// (AT_SECURE) none is, so no caller's environment chooses the libraries a
// set-user-ID program loads.
//
// The device index is the CUDA driver's ordinal, the same number the CUDA
// runtime uses under the same CUDA_VISIBLE_DEVICES.
//
// # Codecs
//
// PyTorch's ConvolutionParams (104 bytes, the key of its BenchmarkCache) is
// Params; the 48-byte cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t is
// Perf; the key that the LD_PRELOAD interposer (cudnn/preload) builds from
// cuDNN's descriptors is FindKey. Each has a Decode function that checks the
// layout and reports false for bytes that are not one, an Append method that
// encodes it, and a String method. Op names the three convolution
// directions and their algorithm enums.
//
// The interposer's key layout, version 1 (little-endian, every field an
// int32 unless noted):
//
//	offset  size  field
//	0       4     magic "ccf1"
//	4       1     op: 1 forward, 2 backward data, 3 backward filter
//	5       1     1 for the ...Ex variant, else 0
//	6       2     reserved, 0
//	8       4     requestedAlgoCount
//	12      8     workspace bytes offered (uint64; 0 unless Ex)
//	20            the four descriptors, in the call's argument order:
//	              forward        x tensor, w filter, conv, y tensor
//	              backward data  w filter, dy tensor, conv, dx tensor
//	              backward filter x tensor, dy tensor, conv, dw filter
//
//	tensor  dataType, nbDims, dims[nbDims], strides[nbDims]
//	filter  dataType, format, nbDims, dims[nbDims]
//	conv    arrayLength, pad[n], stride[n], dilation[n], mode, computeType,
//	        mathType, groupCount, reorderType (-1 if cuDNN has no getter)
//
// Its value is the perf structs cuDNN returned, 48 bytes each, in order.
//
// # Caveats
//
//   - The driver's CUDA version (cuDriverGetVersion, such as 13000) is in the
//     scope, not the driver's release number: two driver releases that
//     support the same CUDA version share results. Put the release in
//     CONVCACHE_TAG if that matters to you.
//   - A driver that hangs in cuInit is given ProbeTimeout; after it Probe
//     reports ErrUnavailable and the stuck call is left to finish on its own
//     thread. Later calls wait for that same call rather than start another.
//   - Built without cgo, Probe always reports ErrUnavailable; the codecs
//     are pure Go and work everywhere.
package cudnn
