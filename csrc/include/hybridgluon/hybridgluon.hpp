/* hybridgluon C++ API: header-only RAII wrappers over the C API (hybridgluon.h, ndlist.h,
 * predict.h). Needs C++11 and linking libhybridgluon (python -m hybridgluon.config --libs).
 *
 *     hybridgluon::Predictor net = hybridgluon::Predictor::from_files(
 *         "lenet-symbol.json", "lenet-0000.params", {{"data", {1, 1, 28, 28}}});
 *     net.set_input("data", pixels);          // std::vector<float> of 784 values
 *     net.forward();
 *     std::vector<float> scores = net.output<float>(0);
 *
 * Errors: every failing C call becomes a hybridgluon::Error (a std::runtime_error) carrying the
 * C API's message (hg_last_error()) and status. Ownership: Tensor shares its C tensor (copying
 * a Tensor adds a reference, like copying a shared_ptr); Predictor and NDList own theirs and
 * are move-only (Predictor::clone() makes a predictor sharing the weights). Thread-safety is the
 * C API's: one Predictor per thread (clone one for each), Tensors may cross threads.
 */
#ifndef HYBRIDGLUON_HPP
#define HYBRIDGLUON_HPP

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "hybridgluon/hybridgluon.h"
#include "hybridgluon/ndlist.h"
#include "hybridgluon/predict.h"

namespace hybridgluon
{

/* A failed C call: what() is the C API's message, status() its status. */
class Error : public std::runtime_error
{
  public:
    Error(hg_status status, const std::string &message)
        : std::runtime_error(message), status_(status)
    {
    }
    hg_status status() const noexcept { return status_; }

  private:
    hg_status status_;
};

/* Throws Error with the thread's last message when st is not HG_OK. */
inline void check(hg_status st)
{
    if (st != HG_OK) throw Error(st, hg_last_error());
}

/* The hg_dtype of a C++ element type (float -> HG_DTYPE_F32, ...). */
template <typename T> struct dtype_of;
template <> struct dtype_of<float> {
    static const hg_dtype value = HG_DTYPE_F32;
};
template <> struct dtype_of<double> {
    static const hg_dtype value = HG_DTYPE_F64;
};
template <> struct dtype_of<uint8_t> {
    static const hg_dtype value = HG_DTYPE_U8;
};
template <> struct dtype_of<int8_t> {
    static const hg_dtype value = HG_DTYPE_I8;
};
template <> struct dtype_of<int32_t> {
    static const hg_dtype value = HG_DTYPE_I32;
};
template <> struct dtype_of<int64_t> {
    static const hg_dtype value = HG_DTYPE_I64;
};

namespace detail
{
template <typename T> void check_dtype(hg_dtype have, const char *what)
{
    if (have != dtype_of<T>::value)
        throw Error(HG_ERR_TYPE, std::string(what) + ": the data is " + hg_dtype_name(have) +
                                     ", the C++ type asks for " +
                                     hg_dtype_name(dtype_of<T>::value));
}
} // namespace detail

/* A tensor (shared ownership of an hg_tensor). An empty Tensor holds NULL. */
class Tensor
{
  public:
    Tensor() noexcept : t_(nullptr) {}
    /* Adopts one reference to t (as returned by the C API). */
    explicit Tensor(hg_tensor *t) noexcept : t_(t) {}
    Tensor(const Tensor &o) noexcept : t_(o.t_)
    {
        if (t_) hg_tensor_retain(t_);
    }
    Tensor(Tensor &&o) noexcept : t_(o.t_) { o.t_ = nullptr; }
    Tensor &operator=(Tensor o) noexcept
    {
        std::swap(t_, o.t_);
        return *this;
    }
    ~Tensor() { hg_tensor_free(t_); }

    /* A new tensor of the given shape, uninitialised. */
    static Tensor empty(const std::vector<int64_t> &shape, hg_dtype dtype = HG_DTYPE_F32)
    {
        hg_tensor *t = nullptr;
        check(hg_tensor_new(static_cast<int>(shape.size()), shape.data(), dtype, &t));
        return Tensor(t);
    }
    /* A new tensor holding a copy of values (values.size() must match the shape). */
    template <typename T>
    static Tensor from_vector(const std::vector<T> &values, const std::vector<int64_t> &shape)
    {
        Tensor t = empty(shape, dtype_of<T>::value);
        t.copy_from(values.data(), values.size() * sizeof(T));
        return t;
    }

    hg_tensor *get() const noexcept { return t_; }
    /* Gives up ownership: the caller must hg_tensor_free() the result. */
    hg_tensor *release() noexcept
    {
        hg_tensor *t = t_;
        t_ = nullptr;
        return t;
    }
    explicit operator bool() const noexcept { return t_ != nullptr; }

    int ndim() const { return hg_tensor_ndim(valid()); }
    std::vector<int64_t> shape() const
    {
        const int64_t *s = hg_tensor_shape(valid());
        return std::vector<int64_t>(s, s + hg_tensor_ndim(t_));
    }
    hg_dtype dtype() const { return hg_tensor_dtype(valid()); }
    int64_t size() const { return hg_tensor_size(valid()); }
    size_t nbytes() const { return hg_tensor_nbytes(valid()); }
    void *data() const { return hg_tensor_data(valid()); }
    template <typename T> T *data() const
    {
        detail::check_dtype<T>(dtype(), "Tensor::data");
        return static_cast<T *>(data());
    }
    void copy_from(const void *src, size_t nbytes)
    {
        check(hg_tensor_copy_from(valid(), src, nbytes));
    }
    void copy_to(void *dst, size_t nbytes) const { check(hg_tensor_copy_to(valid(), dst, nbytes)); }
    template <typename T> std::vector<T> to_vector() const
    {
        detail::check_dtype<T>(dtype(), "Tensor::to_vector");
        std::vector<T> v(static_cast<size_t>(size()));
        copy_to(v.data(), v.size() * sizeof(T));
        return v;
    }

  private:
    hg_tensor *valid() const
    {
        if (!t_) throw Error(HG_ERR_VALUE, "hybridgluon::Tensor: the tensor is empty");
        return t_;
    }
    hg_tensor *t_;
};

/* Runs a registered operator by name with MXNet-style string attributes, e.g.
 * invoke("Convolution", {x, w, b}, {{"kernel", "(3, 3)"}, {"num_filter", "8"}}). */
inline std::vector<Tensor>
invoke(const std::string &op, const std::vector<Tensor> &inputs,
       const std::map<std::string, std::string> &attrs = std::map<std::string, std::string>(),
       int max_outputs = 16)
{
    std::vector<hg_tensor *> ins;
    for (size_t i = 0; i < inputs.size(); i++) ins.push_back(inputs[i].get());
    std::vector<const char *> keys, vals;
    for (std::map<std::string, std::string>::const_iterator it = attrs.begin(); it != attrs.end();
         ++it) {
        keys.push_back(it->first.c_str());
        vals.push_back(it->second.c_str());
    }
    std::vector<hg_tensor *> outs(static_cast<size_t>(max_outputs > 0 ? max_outputs : 1));
    int nout = max_outputs;
    check(hg_op_invoke_str(op.c_str(), static_cast<int>(ins.size()), ins.data(),
                           static_cast<int>(keys.size()), keys.data(), vals.data(), &nout,
                           outs.data()));
    std::vector<Tensor> result;
    for (int i = 0; i < nout; i++) result.push_back(Tensor(outs[static_cast<size_t>(i)]));
    return result;
}

/* A loaded NDArray file (`*.params`, nd.save). Move-only. */
class NDList
{
  public:
    static NDList load(const std::string &path)
    {
        hg_ndlist *l = nullptr;
        check(hg_ndlist_load_file(path.c_str(), &l));
        return NDList(l);
    }
    static NDList load_bytes(const void *data, size_t len)
    {
        hg_ndlist *l = nullptr;
        check(hg_ndlist_load_bytes(data, len, &l));
        return NDList(l);
    }
    /* Saves arrays (with names: a dict file as Gluon writes; without: a list file). */
    static void save(const std::string &path, const std::vector<Tensor> &arrays,
                     const std::vector<std::string> &names = std::vector<std::string>())
    {
        if (!names.empty() && names.size() != arrays.size())
            throw Error(HG_ERR_VALUE, "NDList::save: names and arrays differ in number");
        std::vector<hg_tensor *> a;
        std::vector<const char *> n;
        for (size_t i = 0; i < arrays.size(); i++) a.push_back(arrays[i].get());
        for (size_t i = 0; i < names.size(); i++) n.push_back(names[i].c_str());
        check(hg_ndlist_save_file(path.c_str(), static_cast<int>(a.size()), a.data(),
                                  names.empty() ? nullptr : n.data()));
    }

    NDList(NDList &&o) noexcept : l_(o.l_) { o.l_ = nullptr; }
    NDList &operator=(NDList &&o) noexcept
    {
        std::swap(l_, o.l_);
        return *this;
    }
    NDList(const NDList &) = delete;
    NDList &operator=(const NDList &) = delete;
    ~NDList() { hg_ndlist_free(l_); }

    int size() const { return hg_ndlist_count(l_); }
    bool has_names() const { return hg_ndlist_has_names(l_) != 0; }
    std::string name(int i) const
    {
        const char *n = hg_ndlist_name(l_, i);
        return n ? std::string(n, hg_ndlist_name_len(l_, i)) : std::string();
    }
    Tensor get(int i) const
    {
        hg_tensor *t = nullptr;
        check(hg_ndlist_get(l_, i, &t));
        return Tensor(t);
    }
    hg_ndlist *handle() const noexcept { return l_; }

  private:
    explicit NDList(hg_ndlist *l) noexcept : l_(l) {}
    hg_ndlist *l_;
};

/* A predictor over an exported model (see predict.h). Move-only. */
class Predictor
{
  public:
    struct Input {
        std::string name;
        std::vector<int64_t> shape;
        hg_dtype dtype;
        Input(const std::string &n, const std::vector<int64_t> &s, hg_dtype d = HG_DTYPE_F32)
            : name(n), shape(s), dtype(d)
        {
        }
    };

    /* params_path "" means the graph has no parameters. */
    static Predictor from_files(const std::string &symbol_path, const std::string &params_path,
                                const std::vector<Input> &inputs, int dev_type = HG_DEVICE_CPU,
                                int dev_id = 0)
    {
        std::vector<hg_input_spec> specs = to_specs(inputs);
        hg_predictor *p = nullptr;
        check(hg_predictor_create_from_files(
            symbol_path.c_str(), params_path.empty() ? nullptr : params_path.c_str(), dev_type,
            dev_id, static_cast<int>(specs.size()), specs.data(), &p));
        return Predictor(p);
    }
    /* From the symbol's JSON text and the params file's bytes (both may hold NUL bytes). */
    static Predictor from_memory(const std::string &json, const std::string &params,
                                 const std::vector<Input> &inputs, int dev_type = HG_DEVICE_CPU,
                                 int dev_id = 0)
    {
        std::vector<hg_input_spec> specs = to_specs(inputs);
        hg_predictor *p = nullptr;
        check(hg_predictor_create(json.data(), json.size(), params.data(), params.size(), dev_type,
                                  dev_id, static_cast<int>(specs.size()), specs.data(), &p));
        return Predictor(p);
    }

    Predictor(Predictor &&o) noexcept : p_(o.p_) { o.p_ = nullptr; }
    Predictor &operator=(Predictor &&o) noexcept
    {
        std::swap(p_, o.p_);
        return *this;
    }
    Predictor(const Predictor &) = delete;
    Predictor &operator=(const Predictor &) = delete;
    ~Predictor() { hg_predictor_free(p_); }

    /* A predictor sharing the weights, for another thread. */
    Predictor clone() const
    {
        hg_predictor *p = nullptr;
        check(hg_predictor_clone(p_, &p));
        return Predictor(p);
    }
    hg_predictor *handle() const noexcept { return p_; }

    int num_inputs() const
    {
        int n = 0;
        check(hg_predictor_num_inputs(p_, &n));
        return n;
    }
    std::string input_name(int i) const
    {
        const char *n = nullptr;
        check(hg_predictor_input_name(p_, i, &n));
        return n;
    }
    std::vector<int64_t> input_shape(int i) const
    {
        int64_t s[HG_MAX_NDIM];
        int nd = 0;
        check(hg_predictor_input_shape(p_, i, s, HG_MAX_NDIM, &nd));
        return std::vector<int64_t>(s, s + nd);
    }

    void set_input(const std::string &name, const void *data, size_t nbytes)
    {
        check(hg_predictor_set_input(p_, name.c_str(), data, nbytes));
    }
    template <typename T> void set_input(const std::string &name, const std::vector<T> &values)
    {
        set_input(name, values.data(), values.size() * sizeof(T));
    }
    void forward() { check(hg_predictor_forward(p_)); }

    int num_outputs() const
    {
        int n = 0;
        check(hg_predictor_num_outputs(p_, &n));
        return n;
    }
    std::vector<int64_t> output_shape(int i) const
    {
        int64_t s[HG_MAX_NDIM];
        int nd = 0;
        check(hg_predictor_output_shape(p_, i, s, HG_MAX_NDIM, &nd));
        return std::vector<int64_t>(s, s + nd);
    }
    hg_dtype output_dtype(int i) const
    {
        hg_dtype d = HG_DTYPE_F32;
        check(hg_predictor_output_dtype(p_, i, &d));
        return d;
    }
    size_t output_nbytes(int i) const
    {
        size_t n = 0;
        check(hg_predictor_output_nbytes(p_, i, &n));
        return n;
    }
    void get_output(int i, void *dst, size_t nbytes) const
    {
        check(hg_predictor_get_output(p_, i, dst, nbytes));
    }
    /* Output i as a vector of T (T must match its dtype). */
    template <typename T> std::vector<T> output(int i) const
    {
        detail::check_dtype<T>(output_dtype(i), "Predictor::output");
        std::vector<T> v(output_nbytes(i) / sizeof(T));
        get_output(i, v.data(), v.size() * sizeof(T));
        return v;
    }

    /* New shapes for some inputs (see hg_predictor_reshape). */
    void reshape(const std::vector<Input> &inputs)
    {
        std::vector<hg_input_spec> specs = to_specs(inputs);
        check(hg_predictor_reshape(p_, static_cast<int>(specs.size()), specs.data()));
    }

  private:
    explicit Predictor(hg_predictor *p) noexcept : p_(p) {}
    /* The specs point into inputs, which outlive the C call. */
    static std::vector<hg_input_spec> to_specs(const std::vector<Input> &inputs)
    {
        std::vector<hg_input_spec> specs;
        for (size_t i = 0; i < inputs.size(); i++) {
            hg_input_spec s;
            s.name = inputs[i].name.c_str();
            s.ndim = static_cast<int>(inputs[i].shape.size());
            s.shape = inputs[i].shape.data();
            s.dtype = inputs[i].dtype;
            specs.push_back(s);
        }
        return specs;
    }
    hg_predictor *p_;
};

} // namespace hybridgluon

#endif /* HYBRIDGLUON_HPP */
