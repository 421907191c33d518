#!/bin/sh
# Prints the libcudnn.so.9 the GPU check uses (bench/gpu/parts.sh, run.sh):
# $CUDNN_LIBRARY if set, else the one in PyTorch's nvidia-cudnn wheel where
# $PYTHON (python3) finds it, else the bare name (the loader's search).
if [ -n "${CUDNN_LIBRARY:-}" ]; then echo "$CUDNN_LIBRARY"; exit 0; fi
d=$("${PYTHON:-python3}" -c 'import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null || true)
if [ -n "$d" ] && [ -e "$d/libcudnn.so.9" ]; then echo "$d/libcudnn.so.9"; else echo libcudnn.so.9; fi
