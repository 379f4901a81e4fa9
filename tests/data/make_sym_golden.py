"""Makes tests/data/golden_sym/: symbols and parameters exported by the real
MXNet 1.9.1 from Gluon (hybridize + export), an input and MXNet's outputs.

Run with an interpreter that has mxnet==1.9.1 (never a project dependency):
    $OXNET_MXNET_PYTHON tests/data/make_sym_golden.py
"""
import os

import mxnet as mx
import numpy as np
from mxnet.gluon import nn, rnn

out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden_sym")
os.makedirs(out_dir, exist_ok=True)
mx.random.seed(7)
np.random.seed(7)


class Residual(nn.HybridBlock):
    def __init__(self, c, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.conv1 = nn.Conv2D(c, 3, padding=1, use_bias=False)
            self.bn1 = nn.BatchNorm()
            self.conv2 = nn.Conv2D(c, 3, padding=1, use_bias=False)
            self.bn2 = nn.BatchNorm()

    def hybrid_forward(self, F, x):
        y = F.Activation(self.bn1(self.conv1(x)), act_type="relu")
        return F.Activation(self.bn2(self.conv2(y)) + x, act_type="relu")


class EmbedNorm(nn.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.emb = nn.Embedding(50, 16)
            self.ln = nn.LayerNorm()
            self.out = nn.Dense(3, flatten=False)

    def hybrid_forward(self, F, x):
        return self.out(self.ln(self.emb(x)))


def models():
    mlp = nn.HybridSequential(prefix="mlp_")
    with mlp.name_scope():
        mlp.add(nn.Dense(32, activation="relu"), nn.Dense(16, activation="relu"), nn.Dense(4))
    conv = nn.HybridSequential(prefix="conv_")
    with conv.name_scope():
        conv.add(nn.Conv2D(8, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(2),
                 nn.Conv2D(8, 3), nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(), nn.Flatten(),
                 nn.Dense(5))
    res = nn.HybridSequential(prefix="res_")
    with res.name_scope():
        res.add(nn.Conv2D(6, 3, padding=1), Residual(6), nn.GlobalAvgPool2D(), nn.Dense(3))
    lstm = nn.HybridSequential(prefix="lstm_")
    with lstm.name_scope():
        lstm.add(rnn.LSTM(8, num_layers=2, bidirectional=True, layout="NTC"), nn.Dense(2, flatten=False))
    emb = EmbedNorm(prefix="emb_")
    return [
        ("mlp", mlp, np.random.randn(3, 20).astype("float32")),
        ("convbn", conv, np.random.randn(2, 3, 12, 12).astype("float32")),
        ("residual", res, np.random.randn(2, 3, 8, 8).astype("float32")),
        ("bilstm", lstm, np.random.randn(2, 5, 4).astype("float32")),
        ("embln", emb, np.random.randint(0, 50, size=(2, 6)).astype("float32")),
    ]


for name, net, x in models():
    net.initialize(mx.init.Xavier())
    net.hybridize()
    xin = mx.nd.array(x)
    net(xin)  # deferred init
    # move the BatchNorm running statistics off their defaults
    for p in net.collect_params().values():
        if p.name.endswith(("running_mean", "running_var")):
            p.set_data(mx.nd.array(np.random.uniform(0.5, 1.5, p.shape)))
    y = net(xin)
    net.export(os.path.join(out_dir, name), epoch=0)
    np.save(os.path.join(out_dir, name + "-input.npy"), x)
    np.save(os.path.join(out_dir, name + "-output.npy"), y.asnumpy())
    print(name, y.shape)
