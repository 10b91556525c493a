// Tests of the C++ wrappers (hybridgluon/hybridgluon.hpp), run by tests/test_predict.py:
//   hpp_test SYMBOL.json PARAMS OUT_DIR   (the tiny MLP: input "data" of (2, 5), output (2, 3))
// Prints "ok" and exits 0 when every check held; otherwise prints what failed.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <hybridgluon/hybridgluon.hpp>

namespace hg = hybridgluon;

static int failures = 0;
#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            std::printf("FAIL line %d: %s\n", __LINE__, #cond);                               \
            failures++;                                                                       \
        }                                                                                     \
    } while (0)

// Runs f, which must throw hg::Error whose message contains needle.
template <typename F> static void expect_error(F f, const char *needle, int line)
{
    try {
        f();
        std::printf("FAIL line %d: no exception\n", line);
        failures++;
    } catch (const hg::Error &e) {
        if (e.status() == HG_OK || std::string(e.what()).find(needle) == std::string::npos) {
            std::printf("FAIL line %d: status %d, message '%s'\n", line, (int)e.status(),
                        e.what());
            failures++;
        }
    }
}
#define EXPECT_ERROR(expr, needle) expect_error([&]() { expr; }, needle, __LINE__)

static std::string slurp(const char *path)
{
    std::ifstream f(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

int main(int argc, char **argv)
{
    if (argc != 4) return 2;
    const std::string out_dir = argv[3];
    try {
        // Tensors and ops by name.
        hg::Tensor a = hg::Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
        hg::Tensor b = a; // shares
        CHECK(a.get() == b.get() && a.ndim() == 2 && a.size() == 6 && a.nbytes() == 24);
        std::vector<hg::Tensor> sum = hg::invoke("elemwise_add", {a, b});
        CHECK(sum.size() == 1 && sum[0].to_vector<float>()[5] == 12.0f);
        std::vector<hg::Tensor> r = hg::invoke("sum", {a}, {{"axis", "1"}});
        CHECK(r[0].shape() == std::vector<int64_t>({2}) && r[0].to_vector<float>()[1] == 15.0f);
        EXPECT_ERROR(hg::invoke("no_such_op", {a}), "no_such_op");
        EXPECT_ERROR(hg::invoke("sum", {a}, {{"axis", "7"}}), "axis");
        EXPECT_ERROR(a.to_vector<double>(), "float32");
        EXPECT_ERROR(hg::Tensor().ndim(), "empty");
        EXPECT_ERROR(hg::Tensor::empty({2, -1}), "negative");
        EXPECT_ERROR(a.copy_from(nullptr, 24), "NULL");

        // Params files.
        const std::string path = out_dir + "/hpp_test.params";
        hg::NDList::save(path, {a, sum[0]}, {"arg:a", "arg:s"});
        hg::NDList l = hg::NDList::load(path);
        CHECK(l.size() == 2 && l.has_names() && l.name(1) == "arg:s");
        CHECK(l.get(1).to_vector<float>() == sum[0].to_vector<float>());
        EXPECT_ERROR(l.get(2), "range");
        EXPECT_ERROR(hg::NDList::load(out_dir + "/missing.params"), "missing.params");
        EXPECT_ERROR(hg::NDList::save(path, {a}, {"x", "y"}), "names");
        std::string bytes = slurp(path.c_str());
        EXPECT_ERROR(hg::NDList::load_bytes(bytes.data(), bytes.size() / 2), "NDArray");

        // Predictor.
        std::string json = slurp(argv[1]), params = slurp(argv[2]);
        hg::Predictor p = hg::Predictor::from_memory(json, params, {{"data", {2, 5}}});
        hg::Predictor f = hg::Predictor::from_files(argv[1], argv[2], {{"data", {2, 5}}});
        std::vector<float> x(10);
        for (int i = 0; i < 10; i++) x[i] = 0.1f * (float)i - 0.3f;
        p.set_input("data", x);
        p.forward();
        std::vector<float> y = p.output<float>(0);
        CHECK(y.size() == 6 && p.output_shape(0) == std::vector<int64_t>({2, 3}));
        CHECK(p.num_inputs() == 1 && p.input_name(0) == "data" && p.num_outputs() == 1);
        f.set_input("data", x);
        f.forward();
        CHECK(f.output<float>(0) == y);
        hg::Predictor c = p.clone();
        c.set_input("data", x);
        c.forward();
        CHECK(c.output<float>(0) == y);
        p.reshape({{"data", {1, 5}}});
        CHECK(p.input_shape(0) == std::vector<int64_t>({1, 5}));
        p.set_input("data", std::vector<float>(x.begin(), x.begin() + 5));
        p.forward();
        std::vector<float> y1 = p.output<float>(0);
        CHECK(y1.size() == 3 && std::fabs(y1[2] - y[2]) <= 1e-6f);
        hg::Predictor moved = std::move(p);
        CHECK(moved.handle() != nullptr && p.handle() == nullptr);
        EXPECT_ERROR(moved.set_input("data", x), "bytes");
        EXPECT_ERROR(moved.set_input("nope", x), "nope");
        EXPECT_ERROR(moved.output<int32_t>(0), "float32");
        EXPECT_ERROR(moved.reshape({{"data", {1, 4}}}), "[1,4]");
        EXPECT_ERROR(p.forward(), "NULL");
        EXPECT_ERROR(hg::Predictor::from_memory(json.substr(0, 100), params, {{"data", {2, 5}}}),
                     "JSON");
        EXPECT_ERROR(hg::Predictor::from_memory(json, params.substr(0, 50), {{"data", {2, 5}}}),
                     "params");
        EXPECT_ERROR(hg::Predictor::from_files(argv[1], argv[2], {{"data", {2, 5}}},
                                               HG_DEVICE_GPU),
                     "GPU");
    } catch (const hg::Error &e) {
        std::printf("FAIL: unexpected error: %s\n", e.what());
        return 1;
    }
    if (failures == 0) std::printf("ok\n");
    return failures != 0;
}
