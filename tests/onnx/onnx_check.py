"""ONNX's own checker (Debian's python3-onnx), with shape inference.

usage: onnx_check.py MODEL.onnx
"""
import sys

import onnx


def main():
    model = onnx.load(sys.argv[1])
    onnx.checker.check_model(model, full_check=True)


if __name__ == "__main__":
    main()
