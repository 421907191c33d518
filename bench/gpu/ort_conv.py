#!/usr/bin/env python3
"""bench/gpu/ort_conv.py: a small convolutional network through ONNX
Runtime's CUDA provider with cudnn_conv_algo_search EXHAUSTIVE (make
gpu-check's onnxruntime part, bench/gpu/parts.sh, runs it twice under
convcache run: ONNX Runtime opens cuDNN with dlopen and takes its
functions with dlsym, which the interposer's dlsym serves).

usage: ort_conv.py MODEL.onnx

Builds the model with the onnx package (when MODEL.onnx is not there yet):
six convolutions of distinct shapes (3x3, 1x1 and strided, with ReLU) on a
fixed input, weights from a fixed seed, so that every run computes the
same thing. Then one session on the CUDA provider, the input run twice.
Prints:

  ort VERSION providers P1,P2         the session's providers
  first_ms MS                         the first run (where the benchmarks are)
  second_ms MS
  digest SHA256                       of the output's bytes (first run)

Exits 77 with "skip: REASON" when the CUDA provider does not start here
(the session falls back to the CPU), 1 when the two runs' outputs differ.
"""
import hashlib
import os
import sys
import time


def skip(why):
    print("skip: " + why)
    sys.exit(77)


# (channels in, channels out, kernel, stride)
CONVS = ((32, 64, 3, 1), (64, 64, 3, 1), (64, 128, 1, 1), (128, 128, 3, 2), (128, 256, 1, 1), (256, 64, 3, 1))
INPUT = (8, 32, 64, 64)


def build(path):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(29)
    nodes, inits, x = [], [], "x"
    side = INPUT[2]
    for i, (cin, cout, k, s) in enumerate(CONVS):
        side = (side + 2 * (k // 2) - k) // s + 1
        w = (rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, "w%d" % i))
        nodes.append(helper.make_node("Conv", [x, "w%d" % i], ["c%d" % i], kernel_shape=[k, k], strides=[s, s],
                                      pads=[k // 2] * 4))
        x = "y%d" % i if i < len(CONVS) - 1 else "y"
        nodes.append(helper.make_node("Relu", ["c%d" % i], [x]))
    graph = helper.make_graph(nodes, "convcache_ort_conv",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(INPUT))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [INPUT[0], CONVS[-1][1], side, side])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = min(model.ir_version, 9)
    onnx.checker.check_model(model)
    tmp = path + ".tmp.%d" % os.getpid()
    onnx.save(model, tmp)
    os.replace(tmp, path)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip())
    path = sys.argv[1]
    import numpy as np
    import onnxruntime as ort

    if not os.path.exists(path):
        build(path)
    pre = getattr(ort, "preload_dlls", None)
    if pre:  # cuDNN and CUDA from the nvidia-* wheels, when they are there
        try:
            pre()
        except Exception as e:  # noqa: BLE001 (its own search; the session says what is missing)
            print("ort_conv: preload_dlls: %s" % e, file=sys.stderr)
    cuda = ("CUDAExecutionProvider", {"device_id": 0, "cudnn_conv_algo_search": "EXHAUSTIVE"})
    try:
        sess = ort.InferenceSession(path, providers=[cuda, "CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001
        skip("the CUDA provider did not start: %s" % str(e).splitlines()[0][:200])
    if "CUDAExecutionProvider" not in sess.get_providers():
        skip("the CUDA provider did not start (the session has %s)" % ", ".join(sess.get_providers()))
    x = np.random.default_rng(30).standard_normal(INPUT).astype(np.float32)
    t0 = time.perf_counter()
    y1 = sess.run(None, {"x": x})[0]
    t1 = time.perf_counter()
    y2 = sess.run(None, {"x": x})[0]
    t2 = time.perf_counter()
    print("ort %s providers %s" % (ort.__version__, ",".join(sess.get_providers())))
    print("first_ms %.1f" % (1e3 * (t1 - t0)))
    print("second_ms %.1f" % (1e3 * (t2 - t1)))
    print("digest %s" % hashlib.sha256(y1.tobytes()).hexdigest())
    if y1.tobytes() != y2.tobytes():
        print("ort_conv: the session's two runs differ", file=sys.stderr)
        sys.exit(1)


main()
