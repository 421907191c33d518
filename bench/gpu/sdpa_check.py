"""bench/gpu/sdpa_check.py: scaled dot-product attention through cuDNN's
attention (the backend API, as the convolutions' default path), forward
and backward, on fixed inputs; prints a digest of every output's bytes.

The GPU check's sdpa part (bench/gpu/parts.sh) runs it without and with
the interposer: the digests must be equal (the interposer leaves graphs
other than a single convolution untouched).

Prints "sdpa FORWARD_DIGEST BACKWARD_DIGEST SHAPES" (the outputs; the
gradients) and "torch VERSION cudnn VERSION"; exits 77 when cuDNN
attention cannot run here (then nothing was compared). cuDNN's attention
backward may not repeat bit for bit even without the interposer: the part
runs it twice without, and compares the gradients only when those agree.
"""
import hashlib
import sys

import torch


def main():
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as e:
        print("skip: torch.nn.attention is missing (%s)" % e)
        sys.exit(77)
    torch.manual_seed(0)
    fwd, bwd = hashlib.sha256(), hashlib.sha256()
    shapes = []
    for b, heads, seq, dim in ((4, 8, 512, 64), (2, 16, 1024, 128)):
        q, k, v = (torch.randn(b, heads, seq, dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        try:
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                out.float().sum().backward()
        except RuntimeError as e:
            print("skip: cuDNN attention did not run: %s" % str(e).splitlines()[0])
            sys.exit(77)
        torch.cuda.synchronize()
        for h, t in ((fwd, out), (bwd, q.grad), (bwd, k.grad), (bwd, v.grad)):
            c = t.detach().contiguous().cpu().view(torch.uint8)
            try:
                h.update(c.numpy().tobytes())
            except (ImportError, RuntimeError):  # no numpy
                h.update(bytes(c.tolist()))
        shapes.append("%dx%dx%dx%d" % (b, heads, seq, dim))
    print("sdpa %s %s %s" % (fwd.hexdigest(), bwd.hexdigest(), ",".join(shapes)))
    print("torch %s cudnn %s" % (torch.__version__, torch.backends.cudnn.version()), flush=True)


main()
