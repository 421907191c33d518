// kernels.hpp - four real CPU implementations of a 2-D convolution (NCHW,
// float32), for the demo's autotuner to time against each other:
//
//   direct       loops over output channels, input channels and taps, the
//                innermost loop along an output row (vectorised by -O2)
//   im2col+gemm  unfolds the input into a (C*R*R) x (OH*OW) matrix, then one
//                blocked matrix product with the weights
//   gemm-1x1     1x1, stride 1, no padding: the input already is that matrix,
//                so the product runs on it directly (implicit GEMM)
//   winograd     F(2x2, 3x3) for 3x3 stride 1: 16 matrix products over 4x4
//                transformed tiles, 2.25x fewer multiplications
//
// Which one is fastest depends on the shape, the CPU and its caches: what
// cuDNN's find does on a GPU, in miniature. self_test() checks every
// implementation against direct on awkward shapes.
#ifndef CONVCACHE_DEMO_KERNELS_HPP
#define CONVCACHE_DEMO_KERNELS_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace demo {

struct ConvShape {
    int n, c, h, w; // input
    int k;          // output channels
    int r;          // kernel size (r x r)
    int stride, pad;
    int oh() const { return (h + 2 * pad - r) / stride + 1; }
    int ow() const { return (w + 2 * pad - r) / stride + 1; }
    double flops() const { return 2.0 * n * k * c * r * r * static_cast<double>(oh()) * ow(); }
};

enum Algo : int32_t { kDirect = 0, kIm2colGemm = 1, kGemm1x1 = 2, kWinograd = 3, kNumAlgos = 4 };

inline const char *algo_name(int a) {
    static const char *names[] = {"direct", "im2col+gemm", "gemm-1x1", "winograd"};
    return a >= 0 && a < kNumAlgos ? names[a] : "?";
}

inline bool applicable(int a, const ConvShape &s) {
    switch (a) {
    case kDirect:
    case kIm2colGemm: return true;
    case kGemm1x1: return s.r == 1 && s.stride == 1 && s.pad == 0;
    case kWinograd: return s.r == 3 && s.stride == 1;
    }
    return false;
}

// Workspace each algorithm needs, in bytes.
inline uint64_t workspace_bytes(int a, const ConvShape &s) {
    const uint64_t p = static_cast<uint64_t>(s.oh()) * s.ow();
    switch (a) {
    case kIm2colGemm: return 4ull * s.c * s.r * s.r * p;
    case kWinograd: {
        const uint64_t t = static_cast<uint64_t>((s.oh() + 1) / 2) * ((s.ow() + 1) / 2);
        return 4ull * 16 * (static_cast<uint64_t>(s.k) * s.c + static_cast<uint64_t>(s.c) * t + s.k * t);
    }
    }
    return 0;
}

// C[m x n] = A[m x kd] * B[kd x n], row-major, blocked for the caches; the
// innermost loop runs along a row of B and C. Not inlined, so that every
// algorithm that uses it gets the same code.
__attribute__((noinline)) inline void gemm(int m, int n, int kd, const float *__restrict A,
                                           const float *__restrict B, float *__restrict C) {
    std::fill(C, C + static_cast<size_t>(m) * n, 0.0f);
    const int MB = 32, KB = 128, NB = 512;
    for (int j0 = 0; j0 < n; j0 += NB) {
        const int j1 = std::min(n, j0 + NB);
        for (int p0 = 0; p0 < kd; p0 += KB) {
            const int p1 = std::min(kd, p0 + KB);
            for (int i0 = 0; i0 < m; i0 += MB) {
                const int i1 = std::min(m, i0 + MB);
                for (int i = i0; i < i1; i++) {
                    float *c = C + static_cast<size_t>(i) * n;
                    const float *a = A + static_cast<size_t>(i) * kd;
                    for (int p = p0; p < p1; p++) {
                        const float av = a[p];
                        const float *b = B + static_cast<size_t>(p) * n;
                        for (int j = j0; j < j1; j++) c[j] += av * b[j];
                    }
                }
            }
        }
    }
}

inline void conv_direct(const ConvShape &s, const float *in, const float *wt, float *out) {
    const int OH = s.oh(), OW = s.ow();
    for (int n = 0; n < s.n; n++) {
        for (int oc = 0; oc < s.k; oc++) {
            float *o = out + (static_cast<size_t>(n) * s.k + oc) * OH * OW;
            std::fill(o, o + static_cast<size_t>(OH) * OW, 0.0f);
            for (int ic = 0; ic < s.c; ic++) {
                const float *img = in + (static_cast<size_t>(n) * s.c + ic) * s.h * s.w;
                for (int kh = 0; kh < s.r; kh++) {
                    for (int kw = 0; kw < s.r; kw++) {
                        const float wv = wt[((static_cast<size_t>(oc) * s.c + ic) * s.r + kh) * s.r + kw];
                        // Output columns whose input column is inside the image.
                        int ow0 = 0;
                        while (ow0 < OW && ow0 * s.stride + kw - s.pad < 0) ow0++;
                        int ow1 = OW;
                        while (ow1 > ow0 && (ow1 - 1) * s.stride + kw - s.pad >= s.w) ow1--;
                        for (int oh = 0; oh < OH; oh++) {
                            const int ih = oh * s.stride + kh - s.pad;
                            if (ih < 0 || ih >= s.h) continue;
                            const float *irow = img + static_cast<size_t>(ih) * s.w + kw - s.pad;
                            float *orow = o + static_cast<size_t>(oh) * OW;
                            if (s.stride == 1) {
                                for (int x = ow0; x < ow1; x++) orow[x] += wv * irow[x];
                            } else {
                                for (int x = ow0; x < ow1; x++) orow[x] += wv * irow[x * s.stride];
                            }
                        }
                    }
                }
            }
        }
    }
}

inline void conv_im2col_gemm(const ConvShape &s, const float *in, const float *wt, float *out,
                             std::vector<float> &ws) {
    const int OH = s.oh(), OW = s.ow();
    const size_t P = static_cast<size_t>(OH) * OW, rows = static_cast<size_t>(s.c) * s.r * s.r;
    ws.resize(rows * P);
    for (int n = 0; n < s.n; n++) {
        const float *img = in + static_cast<size_t>(n) * s.c * s.h * s.w;
        for (int ic = 0; ic < s.c; ic++) {
            for (int kh = 0; kh < s.r; kh++) {
                for (int kw = 0; kw < s.r; kw++) {
                    float *col = ws.data() + ((static_cast<size_t>(ic) * s.r + kh) * s.r + kw) * P;
                    for (int oh = 0; oh < OH; oh++) {
                        const int ih = oh * s.stride + kh - s.pad;
                        for (int ow = 0; ow < OW; ow++) {
                            const int iw = ow * s.stride + kw - s.pad;
                            col[static_cast<size_t>(oh) * OW + ow] =
                                (ih >= 0 && ih < s.h && iw >= 0 && iw < s.w)
                                    ? img[(static_cast<size_t>(ic) * s.h + ih) * s.w + iw]
                                    : 0.0f;
                        }
                    }
                }
            }
        }
        gemm(s.k, static_cast<int>(P), static_cast<int>(rows), wt, ws.data(),
             out + static_cast<size_t>(n) * s.k * P);
    }
}

inline void conv_gemm_1x1(const ConvShape &s, const float *in, const float *wt, float *out) {
    const size_t P = static_cast<size_t>(s.h) * s.w;
    for (int n = 0; n < s.n; n++)
        gemm(s.k, static_cast<int>(P), s.c, wt, in + static_cast<size_t>(n) * s.c * P,
             out + static_cast<size_t>(n) * s.k * P);
}

// Winograd F(2x2, 3x3): Y = A^T [ (G g G^T) . (B^T d B) ] A, summed over
// input channels as 16 matrix products.
inline void conv_winograd(const ConvShape &s, const float *in, const float *wt, float *out,
                          std::vector<float> &ws) {
    const int OH = s.oh(), OW = s.ow();
    const int TH = (OH + 1) / 2, TW = (OW + 1) / 2, T = TH * TW;
    const size_t KC = static_cast<size_t>(s.k) * s.c, CT = static_cast<size_t>(s.c) * T,
                 KT = static_cast<size_t>(s.k) * T;
    ws.resize(16 * (KC + CT + KT));
    float *U = ws.data(), *V = U + 16 * KC, *M = V + 16 * CT;
    // U[e][oc][ic] = (G g G^T)[e]
    for (int oc = 0; oc < s.k; oc++) {
        for (int ic = 0; ic < s.c; ic++) {
            const float *g = wt + (static_cast<size_t>(oc) * s.c + ic) * 9;
            float t[4][3];
            for (int j = 0; j < 3; j++) {
                t[0][j] = g[j];
                t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
                t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
                t[3][j] = g[6 + j];
            }
            for (int i = 0; i < 4; i++) {
                float u[4] = {t[i][0], 0.5f * (t[i][0] + t[i][1] + t[i][2]), 0.5f * (t[i][0] - t[i][1] + t[i][2]),
                              t[i][2]};
                for (int j = 0; j < 4; j++) U[(i * 4 + j) * KC + static_cast<size_t>(oc) * s.c + ic] = u[j];
            }
        }
    }
    for (int n = 0; n < s.n; n++) {
        // V[e][ic][tile] = (B^T d B)[e]
        for (int ic = 0; ic < s.c; ic++) {
            const float *img = in + (static_cast<size_t>(n) * s.c + ic) * s.h * s.w;
            for (int ty = 0; ty < TH; ty++) {
                for (int tx = 0; tx < TW; tx++) {
                    float d[4][4];
                    for (int i = 0; i < 4; i++) {
                        const int y = 2 * ty + i - s.pad;
                        for (int j = 0; j < 4; j++) {
                            const int x = 2 * tx + j - s.pad;
                            d[i][j] = (y >= 0 && y < s.h && x >= 0 && x < s.w) ? img[static_cast<size_t>(y) * s.w + x]
                                                                               : 0.0f;
                        }
                    }
                    float b[4][4];
                    for (int j = 0; j < 4; j++) {
                        b[0][j] = d[0][j] - d[2][j];
                        b[1][j] = d[1][j] + d[2][j];
                        b[2][j] = d[2][j] - d[1][j];
                        b[3][j] = d[1][j] - d[3][j];
                    }
                    const size_t col = static_cast<size_t>(ic) * T + static_cast<size_t>(ty) * TW + tx;
                    for (int i = 0; i < 4; i++) {
                        V[(i * 4 + 0) * CT + col] = b[i][0] - b[i][2];
                        V[(i * 4 + 1) * CT + col] = b[i][1] + b[i][2];
                        V[(i * 4 + 2) * CT + col] = b[i][2] - b[i][1];
                        V[(i * 4 + 3) * CT + col] = b[i][1] - b[i][3];
                    }
                }
            }
        }
        for (int e = 0; e < 16; e++) gemm(s.k, T, s.c, U + e * KC, V + e * CT, M + e * KT);
        // Y = A^T m A, 2x2 per tile.
        for (int oc = 0; oc < s.k; oc++) {
            float *o = out + (static_cast<size_t>(n) * s.k + oc) * OH * OW;
            for (int ty = 0; ty < TH; ty++) {
                for (int tx = 0; tx < TW; tx++) {
                    const size_t idx = static_cast<size_t>(oc) * T + static_cast<size_t>(ty) * TW + tx;
                    float m[4][4];
                    for (int e = 0; e < 16; e++) m[e / 4][e % 4] = M[e * KT + idx];
                    float a[2][4];
                    for (int j = 0; j < 4; j++) {
                        a[0][j] = m[0][j] + m[1][j] + m[2][j];
                        a[1][j] = m[1][j] - m[2][j] - m[3][j];
                    }
                    for (int i = 0; i < 2; i++) {
                        const float y0 = a[i][0] + a[i][1] + a[i][2], y1 = a[i][1] - a[i][2] - a[i][3];
                        const int oy = 2 * ty + i;
                        if (oy >= OH) continue;
                        o[static_cast<size_t>(oy) * OW + 2 * tx] = y0;
                        if (2 * tx + 1 < OW) o[static_cast<size_t>(oy) * OW + 2 * tx + 1] = y1;
                    }
                }
            }
        }
    }
}

inline void run_algo(int a, const ConvShape &s, const float *in, const float *wt, float *out, std::vector<float> &ws) {
    switch (a) {
    case kDirect: conv_direct(s, in, wt, out); break;
    case kIm2colGemm: conv_im2col_gemm(s, in, wt, out, ws); break;
    case kGemm1x1: conv_gemm_1x1(s, in, wt, out); break;
    case kWinograd: conv_winograd(s, in, wt, out, ws); break;
    }
}

// Every implementation against direct, on shapes that exercise padding,
// strides, odd sizes and partial tiles. Returns the number of failures.
inline int self_test() {
    const ConvShape shapes[] = {
        {1, 3, 17, 13, 5, 7, 2, 3}, {2, 4, 9, 9, 6, 3, 1, 1}, {1, 5, 8, 11, 3, 3, 1, 0},
        {1, 8, 7, 7, 16, 1, 1, 0},  {2, 6, 10, 10, 4, 1, 2, 0}, {1, 3, 5, 5, 2, 3, 2, 1},
        {1, 16, 14, 14, 8, 3, 1, 1},
    };
    int failures = 0;
    std::vector<float> ws;
    for (const ConvShape &s : shapes) {
        std::vector<float> in(static_cast<size_t>(s.n) * s.c * s.h * s.w), wt(static_cast<size_t>(s.k) * s.c * s.r * s.r);
        uint32_t x = 12345;
        auto rnd = [&] {
            x = x * 1664525u + 1013904223u;
            return static_cast<float>((x >> 9) & 0xffff) / 65536.0f - 0.5f;
        };
        for (float &v : in) v = rnd();
        for (float &v : wt) v = rnd();
        const size_t outn = static_cast<size_t>(s.n) * s.k * s.oh() * s.ow();
        std::vector<float> want(outn), got(outn);
        conv_direct(s, in.data(), wt.data(), want.data());
        for (int a = 1; a < kNumAlgos; a++) {
            if (!applicable(a, s)) continue;
            std::fill(got.begin(), got.end(), 1e30f);
            run_algo(a, s, in.data(), wt.data(), got.data(), ws);
            double worst = 0;
            for (size_t i = 0; i < outn; i++) worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
            if (!(worst < 1e-3)) {
                std::fprintf(stderr, "self-test: %s differs from direct by %g on %dx%dx%dx%d k%d r%d s%d p%d\n",
                             algo_name(a), worst, s.n, s.c, s.h, s.w, s.k, s.r, s.stride, s.pad);
                failures++;
            }
        }
    }
    return failures;
}

} // namespace demo

#endif
