// Predicts Fashion-MNIST classes with an exported LeNet, from C++, with no Python.
//
//     ./predict lenet-symbol.json lenet-0000.params images.bin
//
// images.bin holds N images of 1x28x28 float32 values (native byte order), normalised as the
// model was trained: what `x.asnumpy().astype('float32').tofile('images.bin')` writes. For each
// image the program prints the ten scores and the top class. Errors arrive as exceptions.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <vector>

#include <hybridgluon/hybridgluon.hpp>

namespace {

const int kPixels = 28 * 28;
const char *const kClasses[] = {"t-shirt", "trouser", "pullover", "dress",   "coat",
                                "sandal",  "shirt",   "sneaker",  "bag",     "ankle boot"};

std::vector<float> read_images(const char *path)
{
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error(std::string("cannot open ") + path);
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (bytes.empty() || bytes.size() % (kPixels * sizeof(float)) != 0)
        throw std::runtime_error(std::string(path) +
                                 ": not a whole number of 28x28 float32 images");
    std::vector<float> images(bytes.size() / sizeof(float));
    std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char *>(images.data()));
    return images;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 4) {
        std::cerr << "usage: " << argv[0] << " SYMBOL.json PARAMS.params IMAGES.bin\n";
        return 2;
    }
    try {
        std::vector<float> images = read_images(argv[3]);
        const int64_t batch = static_cast<int64_t>(images.size() / kPixels);
        hybridgluon::Predictor net = hybridgluon::Predictor::from_files(
            argv[1], argv[2], {hybridgluon::Predictor::Input("data", {batch, 1, 28, 28})});
        net.set_input("data", images);
        net.forward();
        std::vector<int64_t> shape = net.output_shape(0);
        if (shape.size() != 2 || shape[0] != batch || shape[1] != 10)
            throw std::runtime_error("expected an output of shape (batch, 10)");
        std::vector<float> scores = net.output<float>(0);
        for (int64_t i = 0; i < batch; i++) {
            const float *s = scores.data() + i * 10;
            std::printf("image %lld: scores", static_cast<long long>(i));
            for (int c = 0; c < 10; c++) std::printf(" %.9g", s[c]);
            int top = static_cast<int>(std::max_element(s, s + 10) - s);
            std::printf("\nimage %lld: top class %d (%s)\n", static_cast<long long>(i), top,
                        kClasses[top]);
        }
    } catch (const hybridgluon::Error &e) {
        std::cerr << "error (status " << e.status() << "): " << e.what() << "\n";
        return 1;
    } catch (const std::exception &e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
