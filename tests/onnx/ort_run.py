"""Runs an ONNX model with ONNX Runtime (the ONNX tests' reference).

usage: ort_run.py MODEL.onnx DIR
Reads DIR/in_K.npy for the model's K-th graph input, writes DIR/ort_K.npy for
its K-th output. Graph optimisations are off, so that each op computes as
ONNX defines it.
"""
import sys

import numpy as np
import onnxruntime as ort


def main():
    model, folder = sys.argv[1], sys.argv[2]
    ort.set_default_logger_severity(3)  # no warnings about what the model leaves unused
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    feed = {v.name: np.load(f"{folder}/in_{k}.npy") for k, v in enumerate(sess.get_inputs())}
    for k, out in enumerate(sess.run(None, feed)):
        np.save(f"{folder}/ort_{k}.npy", np.asarray(out))


if __name__ == "__main__":
    main()
