// One convolution on cudnn_frontend's v1 graph API: fe_graph.hpp.
#include "fe_graph.hpp"

#include <cudnn_frontend.h>

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <vector>

namespace fe = cudnn_frontend;

namespace v8fe {

namespace {

std::string status_of(fe::error_t e) {
    if (e.is_good()) return "ok";
    const std::string m = e.get_message();
    std::string status = "-";
    size_t at = m.find("code: CUDNN_STATUS_");
    if (at != std::string::npos) {
        at += 6;
        size_t end = at;
        while (end < m.size() && (std::isupper(static_cast<unsigned char>(m[end])) || m[end] == '_')) end++;
        status = m.substr(at, end - at);
    }
    return "E" + std::to_string(static_cast<int>(e.get_code())) + "/" + status;
}

std::vector<int64_t> vec(const Conv::Dims &d) { return std::vector<int64_t>(d.begin(), d.end()); }

} // namespace

struct FeConv::Impl {
    cudnnHandle_t handle;
    const Conv &cv;
    fe::graph::Graph graph;
    std::unordered_map<int64_t, void *> pointers;

    Impl(cudnnHandle_t h, const Conv &c, Tensors &t) : handle(h), cv(c) {
        pointers = {{'x', t.x}, {'w', t.w}, {'y', t.y}};
        const fe::DataType_t io = c.l.type == CUDNN_DATA_HALF       ? fe::DataType_t::HALF
                                  : c.l.type == CUDNN_DATA_BFLOAT16 ? fe::DataType_t::BFLOAT16
                                  : c.l.type == CUDNN_DATA_DOUBLE   ? fe::DataType_t::DOUBLE
                                                                    : fe::DataType_t::FLOAT;
        const fe::DataType_t compute = c.l.type == CUDNN_DATA_DOUBLE ? fe::DataType_t::DOUBLE : fe::DataType_t::FLOAT;
        graph.set_io_data_type(io).set_compute_data_type(compute).set_intermediate_data_type(compute);
        auto tensor = [this](const char *name, const Conv::Dims &d, int64_t uid) {
            return graph.tensor(fe::graph::Tensor_attributes()
                                    .set_name(name)
                                    .set_dim(vec(d))
                                    .set_stride(vec(Conv::packed_strides(d)))
                                    .set_uid(uid));
        };
        const std::vector<int64_t> pad = {c.l.pad, c.l.pad}, stride = {c.l.stride, c.l.stride},
                                   dilation = {c.l.dilation, c.l.dilation};
        std::shared_ptr<fe::graph::Tensor_attributes> out;
        Conv::Dims out_dims;
        char out_uid;
        switch (c.dir) {
        case Dir::fprop:
            out = graph.conv_fprop(tensor("x", c.x(), 'x'), tensor("w", c.w(), 'w'),
                                   fe::graph::Conv_fprop_attributes().set_padding(pad).set_stride(stride).set_dilation(
                                       dilation));
            out_dims = c.y(), out_uid = 'y';
            break;
        case Dir::dgrad:
            out = graph.conv_dgrad(tensor("dy", c.y(), 'y'), tensor("w", c.w(), 'w'),
                                   fe::graph::Conv_dgrad_attributes().set_padding(pad).set_stride(stride).set_dilation(
                                       dilation));
            out_dims = c.x(), out_uid = 'x';
            break;
        default:
            out = graph.conv_wgrad(tensor("dy", c.y(), 'y'), tensor("x", c.x(), 'x'),
                                   fe::graph::Conv_wgrad_attributes().set_padding(pad).set_stride(stride).set_dilation(
                                       dilation));
            out_dims = c.w(), out_uid = 'w';
            break;
        }
        out->set_output(true).set_dim(vec(out_dims)).set_stride(vec(Conv::packed_strides(out_dims))).set_uid(out_uid);
    }
};

FeConv::FeConv(cudnnHandle_t h, const Conv &cv, Tensors &t) : impl_(new Impl(h, cv, t)) {}
FeConv::~FeConv() = default;

std::string FeConv::build() {
    fe::graph::Graph &g = impl_->graph;
    std::string st;
    if ((st = status_of(g.validate())) != "ok") return "validate:" + st;
    if ((st = status_of(g.build_operation_graph(impl_->handle))) != "ok") return "build_operation_graph:" + st;
    if ((st = status_of(g.create_execution_plans({fe::HeurMode_t::A}))) != "ok") return "create_execution_plans:" + st;
    if ((st = status_of(g.check_support())) != "ok") return "check_support:" + st;
    if ((st = status_of(g.build_plans(fe::BuildPlanPolicy_t::ALL))) != "ok") return "build_plans:" + st;
    return "ok";
}

int64_t FeConv::count() const { return impl_->graph.get_execution_plan_count(); }

std::string FeConv::tag(int64_t i) const {
    std::string name;
    if (impl_->graph.get_plan_name_at_index(i, name).is_bad() || name.empty()) return "-";
    std::replace(name.begin(), name.end(), '=', ':');
    return name;
}

std::string FeConv::executable(int64_t i) const {
    int64_t ws = 0; // the workspace query checks the index, then that its plan built
    return status_of(impl_->graph.get_workspace_size_plan_at_index(i, ws));
}

int64_t FeConv::workspace(int64_t i) const {
    int64_t ws = 0;
    return impl_->graph.get_workspace_size_plan_at_index(i, ws).is_good() ? ws : -1;
}

int64_t FeConv::autotune_workspace() const { return impl_->graph.get_autotune_workspace_size(); }

std::string FeConv::candidate_tag() const {
    std::string name;
    if (impl_->graph.get_plan_name(name).is_bad() || name.empty()) return "-";
    std::replace(name.begin(), name.end(), '=', ':');
    return name;
}

std::string FeConv::execute_at(int64_t i, void *workspace) {
    return status_of(impl_->graph.execute_plan_at_index(impl_->handle, impl_->pointers, workspace, i));
}

std::string FeConv::execute(void *workspace) {
    return status_of(impl_->graph.execute(impl_->handle, impl_->pointers, workspace));
}

std::string FeConv::autotune(void *workspace) {
    return status_of(impl_->graph.autotune(impl_->handle, impl_->pointers, workspace));
}

} // namespace v8fe
