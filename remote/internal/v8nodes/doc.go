// Package v8nodes runs nodes of PyTorch's default-path sequence (the real
// cudnn_frontend on the stand-in cuDNN: tests/v8fe/torch_like) under
// convcache run, each with a cache file of its own, all sharing one Redis
// tier, and reads what each got from its v8 summary and its event log:
// for the remote tier's two-node test and make bench-remote.
package v8nodes
