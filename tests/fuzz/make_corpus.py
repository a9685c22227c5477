#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the hand-made seeds of tests/fuzz/corpus/<target>/ (valid inputs and near-valid edge cases).
#
# The input layouts are described at the top of each fuzz_<reader>.cpp. The regress-* seeds
# reproduce reader bugs that fuzzing found (minimised, then written out here by hand). Inputs
# that fuzzing finds later may be committed as they are. Run from anywhere:
# python3 tests/fuzz/make_corpus.py
import gzip
import pathlib
import struct
import zlib

HERE = pathlib.Path(__file__).resolve().parent


def write(target, name, data):
    folder = HERE / "corpus" / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


def gz(data):
    # mtime=0: the same bytes on every run.
    return gzip.compress(data, compresslevel=9, mtime=0)


# --- IDX: flags, images length (big-endian u16), images, labels ---------------------------------
def images(n, rows, cols, pixels=None):
    body = bytes(pixels) if pixels is not None else bytes((7 * k + 3) % 256 for k in range(n * rows * cols))
    return struct.pack(">IIII", 0x803, n, rows, cols) + body


def labels(n, values=None):
    body = bytes(values) if values is not None else bytes(k % 10 for k in range(n))
    return struct.pack(">II", 0x801, n) + body


def idx(flags, image_part, label_part):
    return bytes([flags]) + struct.pack(">H", len(image_part)) + image_part + label_part


FLOAT, DOUBLE, IMAGES_ONLY, LABELS_ONLY = 0, 1, 2, 4
write("fuzz_idx", "valid-plain", idx(FLOAT, images(2, 2, 3), labels(2)))
write("fuzz_idx", "valid-gzip", idx(DOUBLE, gz(images(3, 2, 2, [0, 255, 128, 1] * 3)), gz(labels(3, [0, 9, 255]))))
write("fuzz_idx", "valid-empty", idx(FLOAT, images(0, 28, 28), labels(0)))
write("fuzz_idx", "count-mismatch", idx(DOUBLE, images(3, 1, 2), labels(2)))
write("fuzz_idx", "truncated-pixels", idx(FLOAT, images(2, 2, 2)[:-1], labels(2)))
write("fuzz_idx", "truncated-header", idx(FLOAT, images(1, 1, 1)[:10], labels(1)[:6]))
write("fuzz_idx", "trailing-bytes", idx(FLOAT, images(1, 1, 2) + b"\x00", labels(1) + b"\x07"))
write("fuzz_idx", "swapped-magic", idx(FLOAT, labels(2), images(2, 1, 1)))
write("fuzz_idx", "zero-rows", idx(FLOAT, images(1, 0, 5), labels(1)))
write("fuzz_idx", "huge-header", idx(FLOAT, images(0xFFFF, 0xFFFF, 0xFFFF, [1, 2, 3]), labels(0xFFFFFFFF, [4])))
write("fuzz_idx", "images-only-gzip", idx(DOUBLE | IMAGES_ONLY, gz(images(2, 3, 1)), b""))
write("fuzz_idx", "labels-only", idx(LABELS_ONLY, b"", labels(4, [1, 2, 3, 250])))
corrupt = bytearray(gz(images(1, 2, 2)))
corrupt[-6] ^= 0xFF  # the CRC-32 in the gzip trailer
write("fuzz_idx", "gzip-bad-crc", idx(FLOAT, bytes(corrupt), gz(labels(1))))
cut = gz(images(4, 3, 3))
write("fuzz_idx", "gzip-cut-short", idx(FLOAT, cut[: len(cut) // 2], labels(4)))
# Findings: no images, but images of 2^64 - 2^33 + 1 pixels (the column count overflows Index: an
# Eigen assertion) or of about 2^62 pixels (a 0 x 2^62 matrix); and a gzip file whose data is
# complete but whose end (the CRC-32 and length trailer) is cut off, read without a check.
write("fuzz_idx", "regress-zero-images-of-2p64-pixels", idx(IMAGES_ONLY, images(0, 0xFFFFFFFF, 0xFFFFFFFF), b""))
write("fuzz_idx", "regress-zero-images-of-2p62-pixels", idx(DOUBLE | IMAGES_ONLY, images(0, 0x7FFFFFFF, 0x7FFFFFFF), b""))
write("fuzz_idx", "regress-gzip-without-trailer", idx(IMAGES_ONLY, gz(images(1, 1, 2))[:-8], b""))


# --- CSV: flags, parameter, delimiter byte, skip_lines byte, [label name], file -----------------
def csv(flags, parameter=0, delimiter=b",", name=b"", text=b"", skip=0):
    return bytes([flags, parameter]) + delimiter + bytes([skip]) + name + text


HEADER = 1
BY_INDEX, BY_NAME, NAME_AND_INDEX = 2, 4, 6
SEMICOLON, TAB, RAW_DELIMITER = 8, 16, 24
F_F, D_D, F_D, D_F, F_LABEL, D_LABEL, F_I16, D_LL = (t << 5 for t in range(8))
write("fuzz_csv", "header-by-name", csv(HEADER | BY_NAME | F_F, 1, b",", b"y", b"a,b,y\n1,2,0\n3.5,-4e2,1\n"))
write("fuzz_csv", "no-header-index0-semicolon", csv(BY_INDEX | SEMICOLON | D_LABEL, 0, b",", b"", b"2;0.5;1e-3\n0;+7;-8\n"))
write("fuzz_csv", "default-last-column", csv(HEADER | D_D, 0, b",", b"", b"x1,x2,t\n1,2,3.25\n4,5,6\n"))
write("fuzz_csv", "crlf-quotes-blank-lines",
      csv(HEADER | BY_NAME | F_LABEL, 7, b",", b"species", b'"a", "species" ,"b"\r\n\r\n 1 , 2 , 3 \r\n  \r\n4,5,6\r\n'))
write("fuzz_csv", "nan-inf", csv(F_F, 0, b",", b"", b"1,nan\ninf,2\n"))
write("fuzz_csv", "float-range", csv(HEADER | F_D, 0, b",", b"", b"a,b\n1e39,1e-50\n3.4e38,1e308\n"))
write("fuzz_csv", "ragged", csv(HEADER | D_D, 0, b",", b"", b"a,b,c\n1,2,3\n4,5\n"))
write("fuzz_csv", "name-twice", csv(HEADER | BY_NAME | D_D, 1, b",", b"y", b"y,x,y\n1,2,3\n"))
write("fuzz_csv", "header-only", csv(HEADER | F_F, 0, b",", b"", b"a,b\n\n"))
write("fuzz_csv", "tab-int16-out-of-range", csv(TAB | F_I16, 0, b",", b"", b"1\t40000\n2\t-3\n"))
write("fuzz_csv", "long-long-label", csv(D_LL, 0, b",", b"", b"0.5,9223372036854775807\n1,-9223372036854775809\n"))
write("fuzz_csv", "raw-delimiter-pipe", csv(HEADER | RAW_DELIMITER | BY_INDEX | D_F, 1, b"|", b"", b"a|b|c\n1|2|3\n"))
write("fuzz_csv", "contradictory-options", csv(HEADER | NAME_AND_INDEX | D_D, 0x21, b",", b"y", b"y,x\n1,2\n"))
write("fuzz_csv", "index-beyond-columns", csv(BY_INDEX | F_F, 5, b",", b"", b"1,2\n"))
write("fuzz_csv", "one-column", csv(F_F, 0, b",", b"", b"1\n2\n"))
# scikit-learn's layouts: iris.csv (a line of counts, then rows) and boston_house_prices.csv (a
# line of counts, then a header); the line of counts read as a header; skip_lines = -1.
IRIS = b"150,4,setosa,versicolor,virginica\n5.1,3.5,1.4,0.2,0\n4.9,3.0,1.4,0.2,0\n"
BOSTON = b'506,13\n"CRIM","ZN","MEDV"\n0.00632,18,24\n0.02731,0,21.6\n'
write("fuzz_csv", "sklearn-iris-skip-1", csv(D_LABEL, 0, b",", b"", IRIS, skip=1))
write("fuzz_csv", "sklearn-iris-count-line-as-header", csv(HEADER | F_LABEL, 0, b",", b"", IRIS))
write("fuzz_csv", "sklearn-boston-skip-1-header", csv(HEADER | BY_NAME | D_D, 4, b",", b"MEDV", BOSTON, skip=1))
write("fuzz_csv", "sklearn-boston-no-header", csv(D_D, 0, b",", b"", BOSTON))
write("fuzz_csv", "skip-lines-negative", csv(F_F, 0, b",", b"", b"a,b\n1,2\n", skip=255))
write("fuzz_csv", "skip-blank-and-binary-lines", csv(HEADER | F_F, 0, b",", b"", b"\n\x00\xff,\x1b[31m\na,b\n1,2\n", skip=2))
# gzip: whole, cut short before its trailer; a UTF-8 byte-order mark; bytes that messages must escape.
write("fuzz_csv", "gzip-header-skip-1", csv(HEADER | D_D, 0, b",", b"", gz(b"# title\nx,y\n1,2\n3,4\n"), skip=1))
write("fuzz_csv", "gzip-cut-short", csv(F_F, 0, b",", b"", gz(b"1,2\n3,4\n")[:-8]))
write("fuzz_csv", "utf8-bom", csv(HEADER | BY_NAME | F_F, 1, b",", b"a", b"\xef\xbb\xbfa,b\n1,2\n"))
write("fuzz_csv", "binary-field", csv(HEADER | BY_NAME | F_LABEL, 1, b",", b"z", b"a,\x01\x80\xff\"\\,y\n1,\x00\x9b,3\n"))


# --- LIBSVM: flags, feature count, class mask, file ---------------------------------------------
def svm(flags, features=0, classes=0, text=b""):
    return bytes([flags, features, classes]) + text


AS_IS, BINARY, MULTICLASS = 0, 1, 2
DOUBLE_S, LABEL_T, FEATURES, CLASSES, HALF, DUPLICATE = 4, 8, 16, 32, 64, 128
write("fuzz_libsvm", "regression", svm(AS_IS, text=b"1.5 1:0.5 3:-2 # comment\n\n-2 2:1e-3\n+0.25\n"))
write("fuzz_libsvm", "binary-qid-comments",
      svm(BINARY | LABEL_T, text=b"# header\n+1 qid:3 1:1 4:0.5\n-1 qid:3 2:-1\r\n  # only a comment\n-1\t3:2\n"))
write("fuzz_libsvm", "binary-zero-one", svm(BINARY | LABEL_T | DOUBLE_S, text=b"0 1:1\n1 2:1\n0 3:1\n"))
write("fuzz_libsvm", "binary-three-labels", svm(BINARY | LABEL_T, text=b"-1 1:1\n1 1:2\n0 1:3\n"))
write("fuzz_libsvm", "multiclass", svm(MULTICLASS | LABEL_T | DOUBLE_S, text=b"3 1:1\n1 2:1\n7 1:1 2:2\n3\n"))
write("fuzz_libsvm", "multiclass-given-classes",
      svm(MULTICLASS | LABEL_T | CLASSES, 0, 0b01000101, text=b"3 1:1\n1 2:1\n7 1:1 2:2\n"))
write("fuzz_libsvm", "classes-invalid", svm(MULTICLASS | LABEL_T | CLASSES | HALF | DUPLICATE, 0, 3, text=b"3 1:1\n"))
write("fuzz_libsvm", "features-given", svm(AS_IS | FEATURES | DOUBLE_S, 4, text=b"1 1:1 4:4\n2 5:1\n"))
write("fuzz_libsvm", "features-negative", svm(AS_IS | FEATURES, 255, text=b"1 1:1\n"))
write("fuzz_libsvm", "not-increasing", svm(AS_IS, text=b"1 2:1 2:3\n"))
write("fuzz_libsvm", "bad-pairs", svm(AS_IS | DOUBLE_S, text=b"1 :1\n1 1:\n1 0:2\n1 a:2\n1 1:nan\n"))
write("fuzz_libsvm", "float-value-range", svm(AS_IS, text=b"1 1:3.4e38 2:1e39\n"))
write("fuzz_libsvm", "label-int-range", svm(AS_IS | LABEL_T, text=b"2147483647 1:1\n2147483648 1:1\n"))
write("fuzz_libsvm", "empty-file", svm(AS_IS, text=b"# nothing\n\n"))
# Finding: a label beyond float's range becomes an infinite float target.
write("fuzz_libsvm", "regress-float-label-overflow", svm(AS_IS, text=b"1e39\n"))


# --- checkpoint: flags (model in bits 0-1, fix the CRC in bit 2), then the file -----------------
def text(s):
    return struct.pack("<I", len(s)) + s.encode()


def policy(name, settings):
    return text(name) + struct.pack("<I", len(settings)) + b"".join(text(k) + struct.pack("<d", v)
                                                                    for k, v in settings)


def checkpoint(shape, n, scalar, buffers, step=5, epoch=1, epoch_step=2, plan=(40, 8, 1, 0, 1, 7), version=2):
    fmt = "<f" if scalar == 4 else "<d"
    out = b"DPTRNCKP" + struct.pack("<IIQ", version, scalar, n)
    out += text(shape)
    out += struct.pack("<qqq", step, epoch, epoch_step)
    samples, batch, accumulation, drop_last, shuffle, seed = plan
    out += struct.pack("<qqqBBQ", samples, batch, accumulation, drop_last, shuffle, seed)
    if version == 2:  # the run that made it: threads, ranks, shards, synchronizer, optimizer
        out += struct.pack("<qqq", 2, 1, 6)
        out += policy("BackupWorkers", [("chunks", 6), ("stall", 1)]) + policy("Momentum", [("lr", 0.05)])
    out += struct.pack("<I", buffers)
    out += b"".join(struct.pack(fmt, 0.5 * i - 1) for i in range(n * (1 + buffers)))
    return out + struct.pack("<I", zlib.crc32(out))


CHECKPOINT_MODELS = [("softmax_regression 3-2", 8, 4), ("mlp 2-3-2", 17, 8), ("linear_regression 4", 5, 4),
                     ("softmax_regression 3-2", 8, 8)]
for flags, (shape, n, scalar) in enumerate(CHECKPOINT_MODELS):
    for buffers in (0, 1, 2):
        write("fuzz_checkpoint", f"valid-model{flags}-buffers{buffers}",
              bytes([flags]) + checkpoint(shape, n, scalar, buffers))
    write("fuzz_checkpoint", f"valid-version1-model{flags}", bytes([flags]) + checkpoint(shape, n, scalar, 1, version=1))
valid = checkpoint("softmax_regression 3-2", 8, 4, 1)
write("fuzz_checkpoint", "flipped-byte", bytes([0]) + valid[:40] + bytes([valid[40] ^ 1]) + valid[41:])
write("fuzz_checkpoint", "truncated", bytes([0]) + valid[:-9])
write("fuzz_checkpoint", "wrong-version-crc-fixed", bytes([4]) + valid[:8] + b"\x03" + valid[9:])
write("fuzz_checkpoint", "wrong-shape", bytes([1]) + valid)
write("fuzz_checkpoint", "double-file-float-model", bytes([0]) + checkpoint("softmax_regression 3-2", 8, 8, 1))
write("fuzz_checkpoint", "bad-flag-crc-fixed",
      bytes([4]) + checkpoint("softmax_regression 3-2", 8, 4, 1, plan=(40, 8, 1, 2, 1, 7)))
write("fuzz_checkpoint", "not-a-checkpoint", bytes([0]) + b"hello, world\n")
