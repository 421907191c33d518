// networks.hpp - the convolution layers of two real architectures, written
// out from their definitions:
//
//   ResNet-50 (He et al. 2015; torchvision v1.5: the stride is on the 3x3
//   of each stage's first bottleneck): a 7x7 stem, then 3, 4, 6 and 3
//   bottlenecks (1x1 reduce, 3x3, 1x1 expand, plus a 1x1 projection on the
//   first of each stage). 53 convolutions.
//
//   Darknet-53 (Redmon & Farhadi 2018, the YOLOv3 backbone): a 3x3 stem,
//   then five stride-2 3x3 convolutions, each followed by 1, 2, 8, 8 and 4
//   residual blocks (1x1 halving the channels, 3x3 restoring them).
//   52 convolutions.
//
// Every instance is listed, repeats included, because a framework looks up
// the algorithm at every convolution call.
#ifndef CONVCACHE_DEMO_NETWORKS_HPP
#define CONVCACHE_DEMO_NETWORKS_HPP

#include <string>
#include <vector>

#include "kernels.hpp"

namespace demo {

struct Layer {
    std::string name;
    ConvShape shape;
};

inline int conv_out(int in, int r, int stride, int pad) { return (in + 2 * pad - r) / stride + 1; }

inline std::vector<Layer> resnet50(int batch, int size) {
    std::vector<Layer> L;
    auto add = [&](const std::string &name, int c, int hw, int k, int r, int stride, int pad) {
        L.push_back({name, ConvShape{batch, c, hw, hw, k, r, stride, pad}});
    };
    add("conv1", 3, size, 64, 7, 2, 3);
    int hw = conv_out(size, 7, 2, 3);
    hw = conv_out(hw, 3, 2, 1); // max pool 3x3 s2
    int in = 64;
    const int planes[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
    for (int stage = 0; stage < 4; stage++) {
        for (int b = 0; b < blocks[stage]; b++) {
            const int stride = (stage > 0 && b == 0) ? 2 : 1, p = planes[stage];
            const std::string n = "layer" + std::to_string(stage + 1) + "." + std::to_string(b);
            add(n + ".conv1", in, hw, p, 1, 1, 0);
            add(n + ".conv2", p, hw, p, 3, stride, 1);
            const int out_hw = conv_out(hw, 3, stride, 1);
            add(n + ".conv3", p, out_hw, 4 * p, 1, 1, 0);
            if (b == 0) add(n + ".downsample", in, hw, 4 * p, 1, stride, 0);
            in = 4 * p;
            hw = out_hw;
        }
    }
    return L;
}

inline std::vector<Layer> darknet53(int batch, int size) {
    std::vector<Layer> L;
    auto add = [&](const std::string &name, int c, int hw, int k, int r, int stride) {
        L.push_back({name, ConvShape{batch, c, hw, hw, k, r, stride, r / 2}});
    };
    add("conv0", 3, size, 32, 3, 1);
    int hw = size, ch = 32;
    const int repeats[] = {1, 2, 8, 8, 4};
    for (int stage = 0; stage < 5; stage++) {
        const std::string n = "stage" + std::to_string(stage + 1);
        add(n + ".down", ch, hw, 2 * ch, 3, 2);
        hw = conv_out(hw, 3, 2, 1);
        ch *= 2;
        for (int b = 0; b < repeats[stage]; b++) {
            add(n + "." + std::to_string(b) + ".reduce", ch, hw, ch / 2, 1, 1);
            add(n + "." + std::to_string(b) + ".conv", ch / 2, hw, ch, 3, 1);
        }
    }
    return L;
}

} // namespace demo

#endif
