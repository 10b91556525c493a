/* Predicts Fashion-MNIST classes with an exported LeNet, from C, with no Python.
 *
 *     ./predict lenet-symbol.json lenet-0000.params images.bin
 *
 * images.bin holds N images of 1x28x28 float32 values (native byte order), normalised as the
 * model was trained: what `x.asnumpy().astype('float32').tofile('images.bin')` writes. For
 * each image the program prints the ten scores and the top class.
 */
#include <stdio.h>
#include <stdlib.h>

#include <hybridgluon/predict.h>

#define PIXELS (28 * 28)
#define NCLASS 10

static const char *const CLASSES[NCLASS] = {"t-shirt", "trouser", "pullover", "dress", "coat",
                                            "sandal",  "shirt",   "sneaker",  "bag",   "ankle boot"};

/* Reads the whole file; *n receives its size in bytes. NULL on failure (with a message). */
static void *read_file(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        perror(path);
        return NULL;
    }
    void *buf = NULL;
    long size = -1;
    if (fseek(fp, 0, SEEK_END) == 0) size = ftell(fp);
    if (size >= 0 && fseek(fp, 0, SEEK_SET) == 0 && (buf = malloc(size ? (size_t)size : 1)) &&
        fread(buf, 1, (size_t)size, fp) == (size_t)size) {
        *n = (size_t)size;
    } else {
        fprintf(stderr, "%s: cannot read the file\n", path);
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    return buf;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s SYMBOL.json PARAMS.params IMAGES.bin\n", argv[0]);
        return 2;
    }
    size_t nbytes = 0;
    float *images = read_file(argv[3], &nbytes);
    if (!images) return 1;
    if (nbytes == 0 || nbytes % (PIXELS * sizeof(float)) != 0) {
        fprintf(stderr, "%s: %zu bytes is not a whole number of 28x28 float32 images\n", argv[3],
                nbytes);
        free(images);
        return 1;
    }
    int64_t batch = (int64_t)(nbytes / (PIXELS * sizeof(float)));

    int status = 1;
    float *scores = NULL;
    hg_predictor *pred = NULL;
    int64_t shape[4] = {batch, 1, 28, 28};
    hg_input_spec input = {"data", 4, shape, HG_DTYPE_F32};
    if (hg_predictor_create_from_files(argv[1], argv[2], HG_DEVICE_CPU, 0, 1, &input, &pred) ||
        hg_predictor_set_input(pred, "data", images, nbytes) || hg_predictor_forward(pred)) {
        fprintf(stderr, "error: %s\n", hg_last_error());
        goto done;
    }

    int64_t out_shape[HG_MAX_NDIM];
    int ndim = 0;
    size_t out_bytes = 0;
    if (hg_predictor_output_shape(pred, 0, out_shape, HG_MAX_NDIM, &ndim) ||
        hg_predictor_output_nbytes(pred, 0, &out_bytes)) {
        fprintf(stderr, "error: %s\n", hg_last_error());
        goto done;
    }
    if (ndim != 2 || out_shape[0] != batch || out_shape[1] != NCLASS) {
        fprintf(stderr, "error: expected an output of shape (%lld, %d)\n", (long long)batch,
                NCLASS);
        goto done;
    }
    scores = malloc(out_bytes);
    if (!scores || hg_predictor_get_output(pred, 0, scores, out_bytes)) {
        fprintf(stderr, "error: %s\n", scores ? hg_last_error() : "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < batch; i++) {
        const float *s = scores + i * NCLASS;
        int top = 0;
        printf("image %lld: scores", (long long)i);
        for (int c = 0; c < NCLASS; c++) {
            printf(" %.9g", s[c]);
            if (s[c] > s[top]) top = c;
        }
        printf("\nimage %lld: top class %d (%s)\n", (long long)i, top, CLASSES[top]);
    }
    status = 0;
done:
    free(scores);
    hg_predictor_free(pred);
    free(images);
    return status;
}
