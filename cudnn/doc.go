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
// # The backend-API ("v8") interposer
//
// PyTorch's default convolution path goes through cuDNN's backend API with
// cudnn_frontend: for a shape it has not met, with benchmark mode on, it
// builds an operation graph, asks heuristics (and the fallback list) for
// engine configs, filters them by rules cuDNN cannot see (deterministic,
// tf32, errata), builds a plan for each, drops those whose workspace its
// allocator cannot give, times up to benchmark_limit of them (a warm-up
// execute, then one timed execute each) and keeps the fastest plan that
// runs in a map that dies with the process. The interposer
// (cudnn/preload/v8_*.c) sees those calls, as libtorch_cuda makes them
// through ordinary dynamic linking, and acts at three points:
//
//   - Key: a graph holding one convolution operation is keyed by what the
//     host set on it, as it set it: every attribute of the operation, its
//     tensors (dimensions, strides, data type, byte alignment, unique id,
//     virtual flag, ...) and its convolution descriptor, in the layout
//     below, under the device scope of the graph's handle. Anything else
//     (matmul, attention, fused graphs, an attribute that cannot be keyed)
//     passes through untouched.
//   - Order: when the key holds choices, the heuristics results the host
//     reads are reordered so that they come first (the host gets every
//     config, once: only the order changes; a host that asks for fewer
//     results than there are gets the same ones as without convcache).
//     Heuristics may fill fewer results than their count query answers:
//     what they fill is what is reordered (on an H100 with cuDNN 9.19, 21
//     of ResNet-50's 204 graphs stood aside until the read ahead took
//     what was filled rather than giving up). The host then builds and times a
//     stored choice first, if its own filters keep it.
//   - Timing: if the first plan the host times is a stored choice, reads
//     back as the plan of that choice read when it was stored, and runs,
//     every other plan's
//     first execute (its warm-up) is refused with CUDNN_STATUS_NOT_SUPPORTED,
//     which the host's timing loop skips: the host times one plan, and runs
//     it. In any other case (the host filtered the stored choice out, it
//     failed to finalize or to run, it is not on offer any more) the
//     interposer stands aside: nothing has been refused yet, and the host
//     benchmarks exactly as it would without convcache.
//
// The rule the interposer holds: every status and every attribute a host
// reads is one cuDNN would have given it, except the refusal of a
// non-stored plan's first execute while the host times the stored one (and
// the SUCCESS of a deferred finalize, below, for a plan that then never
// runs). So the refusals end with timing: the window closes when the
// served plan is destroyed, runs again after the host passed over another
// plan (in earnest), fails there, has no plan left to refuse, or when the
// thread that timed it starts on another graph; then every execute of the
// graph's plans goes straight to cuDNN. Executes are looked at through a
// counting filter of the plans that need it (a plan of a graph being
// benchmarked, a deferred or blocked plan), so a host that keeps every plan
// alive pays nothing once timing is over. When in doubt, stand aside.
//
// The host's own choice is learnt from what it does after timing, once a
// plan it timed is destroyed: a plan it ran again after others (its run of
// its choice; a timing loop goes from plan to plan), or the plan that ran
// last if it is the first to go (a v1 graph destroys its plans fastest
// first), else the plan it runs next (cudnn_frontend's timing loop drops one
// of two plans that time the same before the host chooses), or the one plan
// left of several when it ran last. Nothing is learnt where no rule
// applies: that graph is benchmarked again next time. A choice served that
// then fails in the host's run after timing is replaced by "CCV1" with no
// choice: the next process stands aside and benchmarks in full. What is
// stored is what that plan's engine config reads as, the identity the
// heuristics results are matched by (and cudnn_frontend's plan tags are
// made of); where the plan itself reads otherwise, a digest of the plan's
// reading is stored beside it, and checked before serving. (On an H100
// with cuDNN 9.19, 21 of 204 ResNet-50 graphs stood aside because their
// stored choices, then read from the plan, were not found among the
// heuristics results; a plan that reads otherwise than its config is the
// suspected cause, not yet confirmed on a GPU.) A graph
// with fewer than two plans alive at its
// first execute is not a benchmark (benchmark mode off) and nothing is
// learnt from it. The choice is merged into the stored list: choices that
// failed here, that heuristics no longer offer, or that the host timed and
// did not choose are dropped; choices the host did not build (its filters)
// stay ahead of it, since they win where they are allowed (a deterministic
// run and a non-deterministic one each keep theirs).
//
// Why the other plans are still built: safety decides it. A
// stored choice can fail to run, or be dropped by the host's workspace
// limit, only after every plan was built (PyTorch builds all candidates,
// then filters by workspace, then times). Had the interposer refused the
// other builds, the host would then end with no plan at all and raise an
// error it would not have had. So in the default mode the host builds what
// it always builds, and times one plan. The other plans' finalizes are
// deferred (cudnn/preload/v8_plans.c): the host is told they succeeded,
// reads their workspace from their engine config while timing lasts, and
// each is finalized in cuDNN before any other use (an execute at any time,
// any other attribute read, a workspace read after timing, a second
// finalize), by one thread while others wait; one whose real finalize
// fails, or that needs more workspace than its config said, never runs.
// An engine config the host destroys while a deferred plan needs it stays
// alive in cuDNN, and is gone for the host: a second destroy, and any call
// that names it, is CUDNN_STATUS_BAD_PARAM. CONVCACHE_MODE=strict, where a
// graph that would need benchmarking is an error by definition, also
// refuses to finalize every plan but the first stored choice (and every
// plan of a graph with no usable choice).
//
// Single flight: a graph nobody has stored is leased at its first
// heuristics query: a helper thread calls convcache_get_or_create for the
// key with a builder that waits for this host's benchmark to finish, so
// threads and processes meeting the same new graph wait and then serve its
// choice. The lease follows the host's progress, not its lifetime: it is
// let go when the host has made no progress on that graph (no heuristics
// query, plan finalize or execute of it in flight or ended within
// CONVCACHE_BUILD_IDLE_MS, 2 s), after CONVCACHE_BUILD_TIMEOUT_MS in all,
// or at once when the benchmarking process dies; the waiters then
// benchmark for themselves, and a late choice is stored with a plain
// insert.
//
// Costs: an execute of a plan nobody is benchmarking costs a hash of its
// address and one load before the real call (the warm path, after
// PyTorch's own map answers). The interposer keeps a shadow of each live
// graph, operation, heuristics, engine, engine config and plan, freed when
// the host destroys it, at most 2^21 of them, in an open-addressing table
// that grows and shrinks with them. Of the many leaves (tensors and
// convolutions) it keeps nothing but what cuDNN does not read back: their
// creates and most sets cost a look at the type or the attribute's name;
// when an operation takes a leaf in, the leaf's attributes are read back
// from cuDNN (a fixed list per type). A tensor's byte alignment and
// reordering mode and a convolution's mode, which cuDNN 9 (9.1, 9.19
// and 9.28 checked) does not give back, are kept as set, in one word in
// the leaf's 16-byte table slot (a 32-byte shadow where a value does not
// fit it); an attribute on neither list makes the leaf's graphs pass
// through.
//
// The key, layout 1: "ccg1", then the graph's attributes (its handle
// left out), each a record
//
//	u16 name, u8 type, u8 0, u16 count, u16 len, len bytes
//
// sorted by name, where a value attribute's bytes are its elements
// (little-endian) and a descriptor attribute's are, per element, u16 type,
// u16 len and that descriptor's own records: the graph's one operation,
// the operation's tensors and convolution, by content. A graph's and an
// operation's records are as the host set them; a leaf's, as cuDNN reads
// them back (its defaults included) merged with those kept as set. (Keys
// made before leaves were read back, 2026-11-28, hold only what the host
// set: such graphs are benchmarked once more.) GraphKey decodes it.
//
// The value: "CCV1", a count n of 1 to 4 (0, with nothing after it: the
// choice served last failed after timing), then n engine choice records
// (include/convcache_engine.h, 800 bytes each), most preferred first: each
// what the engine config the host built its plan from reads as, since
// heuristics results are matched by their configs. Where a plan reads
// otherwise than its config (some engines of cuDNN 9 on a GPU), the value
// is "CCV2" and n 8-byte digests of what each choice's plan read as follow:
// a plan is served only if it still reads so. DecodeEngineChoices decodes
// both; a value that fails any check is ignored and replaced. An
// interposer older than "CCV2" treats such a value as damaged: it
// benchmarks the graph and stores "CCV1" in its place (and a "CCV2" list of
// 4 choices, 3,240 bytes, is longer than its 3,208-byte buffer: it runs that
// graph uncached, with one warning), so old and new versions sharing a file
// each benchmark graphs the other stored.
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
//   - The interposer serves a host that calls libcudnn's exported
//     functions, and on x86-64 one that takes them with dlsym or dlvsym
//     from a cuDNN library's handle, RTLD_DEFAULT or RTLD_NEXT (a
//     cudnn_frontend built with NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING, ONNX
//     Runtime): the interposer's dlsym returns its own function for the
//     twelve it serves and glibc's answer for everything else
//     (docs/interposer.md). A host that finds them by other means (reading
//     the ELF itself, dlmopen) is not seen. A stored choice
//     that heuristics offer only in the fallback list is timed after the
//     host's other candidates: the interposer then stands aside.
package cudnn
