"""Networks drawn and summarised by tests/python/test_visualization.py and
by make_viz_golden.py (which runs them through the real MXNet 1.9.1).

``build(mx)`` takes the framework module (oxnet or mxnet) and returns
``{name: (symbol, input shapes)}``; call it inside a fresh
``mx.name.NameManager()`` so that automatic names are the same in both."""


def mlp(mx):
    x = mx.sym.var("data")
    x = mx.sym.FullyConnected(x, num_hidden=128, name="fc1")
    x = mx.sym.Activation(x, act_type="relu", name="relu1")
    x = mx.sym.FullyConnected(x, num_hidden=64, name="fc2")
    x = mx.sym.Activation(x, act_type="relu", name="relu2")
    x = mx.sym.FullyConnected(x, num_hidden=10, no_bias=True, name="fc3")
    return mx.sym.SoftmaxOutput(x, name="softmax"), {"data": (32, 784)}


def convnet(mx):
    x = mx.sym.var("data")
    x = mx.sym.Convolution(x, kernel=(5, 5), num_filter=20, name="conv1")
    x = mx.sym.BatchNorm(x, name="bn1")
    x = mx.sym.Activation(x, act_type="tanh", name="tanh1")
    x = mx.sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    x = mx.sym.Convolution(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=16, num_group=4, no_bias=True,
                           name="conv2")
    x = mx.sym.LeakyReLU(x, act_type="elu", name="elu")
    x = mx.sym.Pooling(x, pool_type="avg", global_pool=True, kernel=(1, 1), name="gpool")
    x = mx.sym.Flatten(x, name="flat")
    x = mx.sym.Dropout(x, p=0.5, name="drop")
    x = mx.sym.FullyConnected(x, num_hidden=10, name="fc")
    return mx.sym.softmax(x, name="sm"), {"data": (8, 3, 28, 28)}


def resnet(mx):
    """Two residual blocks, a concat, an embedding branch and a two-output group."""
    x = mx.sym.var("data")
    x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=8, name="stem")
    for i in range(2):
        y = mx.sym.BatchNorm(x, fix_gamma=False, name="b%d_bn1" % i)
        y = mx.sym.Activation(y, act_type="relu", name="b%d_relu1" % i)
        y = mx.sym.Convolution(y, kernel=(3, 3), pad=(1, 1), num_filter=8, no_bias=True, name="b%d_conv1" % i)
        y = mx.sym.BatchNorm(y, name="b%d_bn2" % i)
        x = mx.sym.elemwise_add(x, y, name="b%d_add" % i)
    x = mx.sym.Concat(x, x, dim=1, name="cat")
    x = mx.sym.Reshape(x, shape=(0, -1), name="rs")
    e = mx.sym.Embedding(mx.sym.var("tok"), input_dim=50, output_dim=16, name="emb")
    e = mx.sym.sum(e, axis=1, name="esum")
    x = mx.sym.FullyConnected(x, num_hidden=16, name="fc") + e
    out = mx.sym.Group([x, mx.sym.SliceChannel(x, num_outputs=2, name="sl")[1]])
    return out, {"data": (2, 3, 8, 8), "tok": (2, 5)}


def embconv(mx):
    """MXNet's test_viz network: a bias variable given by hand, lr_mult/wd_mult, a 10-way slice."""
    bias = mx.sym.var("fc1_bias", lr_mult=1.0)
    x = mx.sym.Embedding(mx.sym.var("data"), input_dim=100, output_dim=28, name="emb1")
    x = mx.sym.Convolution(x, num_filter=32, kernel=(3, 3), stride=(2, 2), name="conv1")
    x = mx.sym.BatchNorm(x, name="bn1")
    x = mx.sym.Activation(x, act_type="relu", name="relu1")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="mp1")
    x = mx.sym.FullyConnected(x, bias=bias, num_hidden=10, lr_mult=0, name="fc1")
    x = mx.sym.FullyConnected(x, num_hidden=10, wd_mult=0.5, name="fc2")
    return mx.sym.SliceChannel(x, num_outputs=10, squeeze_axis=0, name="slice_1"), {"data": (1, 3, 28)}


NETS = (mlp, convnet, resnet, embconv)

# (variant name, print_summary keyword arguments given the net's input shapes)
SUMMARIES = (
    ("noshape", lambda shapes: {}),
    ("shape", lambda shapes: {"shape": shapes}),
    ("narrow", lambda shapes: {"shape": shapes, "line_length": 80, "positions": [30, 50, 60, 80]}),
)

# (variant name, plot_network keyword arguments given the net's input shapes and numpy)
PLOTS = (
    ("plot", lambda shapes, np: {}),
    ("plot_shape", lambda shapes, np: {"shape": shapes, "dtype": {k: np.float32 for k in shapes}}),
    ("plot_weights", lambda shapes, np: {"hide_weights": False, "title": "t", "save_format": "png",
                                         "node_attrs": {"shape": "oval"}}),
)


def build(mx):
    return {f.__name__: f(mx) for f in NETS}
