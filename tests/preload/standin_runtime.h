/*
 * The stand-in CUDA driver and runtime as a test program calls them
 * (tests/preload/standin_cuda.c, standin_cudart.c): what a CUDA program has
 * initialized and running when it calls cuDNN, and the events that time
 * plans as PyTorch's do.
 */
#ifndef CONVCACHE_STANDIN_RUNTIME_H
#define CONVCACHE_STANDIN_RUNTIME_H

int cuInit(unsigned flags);
void *standin_cuda_stream(int dev);

typedef struct cc_event *cudaEvent_t;
int cudaEventCreate(cudaEvent_t *e);
int cudaEventDestroy(cudaEvent_t e);
int cudaEventRecord(cudaEvent_t e, void *stream);
int cudaEventSynchronize(cudaEvent_t e);
int cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);

#endif
