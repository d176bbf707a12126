"""Zoo, shapes, route and graph checks (issue 2)."""
import networkx as nx
import pytest

from snsim.errors import GraphError, UnknownNameError
from snsim.graph import GraphBuilder, backward_order, check_graph, conv_out, forward_order, route
from snsim.zoo import build_network

# torchvision's published parameter counts at 224 px / 1000 classes (torchvision model docs)
TORCHVISION_PARAMS = {
    "alexnet": 61_100_840, "vgg16": 138_357_544, "vgg19": 143_667_240,
    "resnet18": 11_689_512, "resnet34": 21_797_672, "resnet50": 25_557_032,
    "resnet101": 44_549_160, "resnet152": 60_192_808, "densenet121": 7_978_856,
    "mobilenet_v2": 3_504_872,
}
# torchvision's published GFLOPS (multiply-accumulates, in G) at 224 px
TORCHVISION_GMACS = {"alexnet": 0.71, "vgg16": 15.47, "resnet50": 4.09, "resnet152": 11.51,
                     "densenet121": 2.83, "mobilenet_v2": 0.30}


def params(G):
    return sum(a["params"] for _, a in G.nodes(data=True))


def macs(G):
    return sum(a["macs"] for _, a in G.nodes(data=True))


@pytest.mark.parametrize("name,expected", sorted(TORCHVISION_PARAMS.items()))
def test_parameter_counts_equal_torchvision(name, expected):
    assert params(build_network(name, batch=1)) == expected


@pytest.mark.parametrize("name,gmacs", sorted(TORCHVISION_GMACS.items()))
def test_macs_within_two_percent_of_torchvision(name, gmacs):
    got = macs(build_network(name, batch=1)) / 1e9
    assert abs(got - gmacs) / gmacs < 0.02, got


def test_other_reference_counts():
    # timm inception_v4 (BasicConv2d = conv without bias + BN) has 42,679,816 parameters
    assert params(build_network("inception_v4", batch=1)) == 42_679_816
    # He et al. CIFAR ResNet-32 with option-A shortcuts: 464,154 (hand sum in SPEC §8)
    assert params(build_network("cifar_resnet32", batch=1)) == 464_154
    # the release's AlexNet (ungrouped, LRN, 227 px): SPEC §8 table
    assert params(build_network("alexnet", batch=1, variant="release")) == 62_378_344


@pytest.mark.parametrize("name,layers,millions", [
    ("resnet50", 192, 25.56), ("resnet101", 379, 44.55), ("resnet152", 566, 60.19),
    ("resnet256", 940, 91.48), ("resnet512", 1864, 178.83), ("resnet1024", 3712, 353.52),
    ("resnet2500", 9168, 920.64)])
def test_release_resnet_table(name, layers, millions):
    # SPEC §8 ResNet table (route layers and parameters of the release's networks)
    G = build_network(name, batch=1)
    assert G.number_of_nodes() == layers
    assert round(params(G) / 1e6, 2) == millions


def test_resnet2500_layer_types():
    G = build_network("resnet2500", batch=1)
    counts = {}
    for _, a in G.nodes(data=True):
        counts[a["type"]] = counts.get(a["type"], 0) + 1
    # SPEC §8: 2,501 CONV, 2,501 BN, 2,497 ACT, 832 FORK, 832 JOIN, 2 POOL, FC, SOFTMAX, DATA
    assert counts == {"CONV": 2501, "BN": 2501, "ACT": 2497, "FORK": 832, "JOIN": 832,
                      "POOL": 2, "FC": 1, "SOFTMAX": 1, "DATA": 1}


def test_shapes_hand_checked():
    assert conv_out(227, 11, 4, 0) == 55 and conv_out(224, 7, 2, 3) == 112
    G = build_network("alexnet", batch=2, variant="release")
    shapes = [a["out_shape"] for _, a in G.nodes(data=True) if a["type"] == "POOL"]
    assert shapes == [(2, 96, 27, 27), (2, 256, 13, 13), (2, 256, 6, 6)]
    G = build_network("resnet50", batch=1, input_size=227, variant="release")
    stem = [a["out_shape"] for _, a in G.nodes(data=True)][1:5]
    assert stem[0] == (1, 64, 114, 114) and stem[3] == (1, 64, 56, 56)   # SPEC §8: 114, then 56


def test_resnet_block_route_order():
    G = build_network("resnet50", batch=1)
    names = [G.nodes[n]["name"] for n in forward_order(G)]
    i = names.index("layer1.0.fork")
    # F = FORK -> main branch -> shortcut -> JOIN -> ReLU (SPEC §2.2)
    assert names[i:i + 13] == [
        "layer1.0.fork", "layer1.0.a.conv", "layer1.0.a.bn", "layer1.0.a.relu",
        "layer1.0.b.conv", "layer1.0.b.bn", "layer1.0.b.relu", "layer1.0.c.conv",
        "layer1.0.c.bn", "layer1.0.downsample.conv", "layer1.0.downsample.bn",
        "layer1.0.join", "layer1.0.relu"]
    back = [G.nodes[n]["name"] for n in backward_order(G)]
    j = back.index("layer1.0.relu")
    # B = ReLU -> JOIN -> main branch reversed -> shortcut -> FORK
    assert back[j:j + 13] == [
        "layer1.0.relu", "layer1.0.join", "layer1.0.c.bn", "layer1.0.c.conv",
        "layer1.0.b.relu", "layer1.0.b.bn", "layer1.0.b.conv", "layer1.0.a.relu",
        "layer1.0.a.bn", "layer1.0.a.conv", "layer1.0.downsample.bn",
        "layer1.0.downsample.conv", "layer1.0.fork"]
    assert back[-1] == "data"


@pytest.mark.parametrize("name", ["resnet50", "inception_v4", "densenet121", "cifar_resnet32"])
def test_route_is_topological_on_branchy_graphs(name):
    G = build_network(name, batch=1)
    fwd = forward_order(G)
    pos = {n: i for i, n in enumerate(fwd)}
    assert len(fwd) == G.number_of_nodes()
    assert all(pos[u] < pos[v] for u, v in G.edges)
    bwd = backward_order(G)
    bpos = {n: i for i, n in enumerate(bwd)}
    assert sorted(bwd) == sorted(G)
    assert all(bpos[v] < bpos[u] for u, v in G.edges)   # consumers' backward first
    assert len(route(G)) == 2 * G.number_of_nodes()


def test_inception_concat_after_all_branches():
    G = build_network("inception_v4", batch=1)
    pos = {n: i for i, n in enumerate(forward_order(G))}
    for n, a in G.nodes(data=True):
        if a["type"] == "CONCAT":
            assert all(pos[p] < pos[n] for p in G.predecessors(n))
            assert G.in_degree(n) >= 2


def test_unknown_network_is_one_clear_line():
    with pytest.raises(UnknownNameError, match="network 'resnet7' is unknown; known: .*alexnet"):
        build_network("resnet7", batch=1)


def test_custom_resnet_tuple():
    G = build_network("resnet:1,1,1,1", batch=1)
    assert G.graph["name"] == "resnet14"


def _edge_graph(edges, types=None):
    G = nx.DiGraph()
    for n in {u for e in edges for u in e}:
        G.add_node(n, type=(types or {}).get(n, "ACT"), name=f"l{n}", out_shape=(1, 1))
    for i, (u, v) in enumerate(edges):
        G.add_edge(u, v, src_port=0, dst_port=0)
    return G


def test_cyclic_graph_rejected():
    G = _edge_graph([(1, 2), (2, 3), (3, 2)], {1: "DATA"})
    with pytest.raises(GraphError, match="cyclic"):
        check_graph(G, source="user.json")


def test_disconnected_graph_rejected():
    G = _edge_graph([(1, 2), (3, 4)], {1: "DATA", 3: "DATA"})
    with pytest.raises(GraphError, match="disconnected"):
        check_graph(G, source="user.json")


def test_unknown_layer_type_and_negative_size_rejected():
    G = _edge_graph([(1, 2)], {1: "DATA", 2: "WARP"})
    with pytest.raises(UnknownNameError, match="unknown type 'WARP'"):
        check_graph(G)
    G = _edge_graph([(1, 2)], {1: "DATA"})
    G.nodes[2]["param_bytes"] = -4
    with pytest.raises(GraphError, match=r"param_bytes \(=-4\) must be an integer >= 0"):
        check_graph(G)


def test_builder_rejects_bad_shapes():
    b = GraphBuilder("bad", batch=1, input_shape=(3, 4, 4))
    with pytest.raises(GraphError, match="larger than input"):
        b.conv(b.data(), 8, 7)
    with pytest.raises(GraphError, match="batch"):
        GraphBuilder("bad", batch=0, input_shape=(3, 4, 4))


def test_adaptive_pool_keeps_torchvision_classifiers_at_other_sizes():
    # torchvision's VGG/AlexNet pool to 7x7 / 6x6 adaptively, so parameters do not depend on size
    for name, side in (("vgg16", 64), ("alexnet", 128)):
        G = build_network(name, batch=2, input_size=side)
        assert params(G) == TORCHVISION_PARAMS[name]
        pools = [a for _, a in G.nodes(data=True) if a.get("adaptive")]
        assert len(pools) == 1 and pools[0]["out_shape"][2:] in ((7, 7), (6, 6))
    # at 224 the adaptive pool is an identity and is left out, as SuperNeurons has none
    assert not any(a.get("adaptive") for _, a in build_network("vgg16", batch=1).nodes(data=True))


def test_articulation_points_are_networkx_s():
    # chen_sqrt's cut vertices without a networkx graph (a spliced program has none made):
    # the same set as networkx on the zoo and on random DAGs (disconnected ones, isolated
    # layers, chains and diamonds)
    import random

    from snsim.graph import adjacency, articulation_points
    graphs = [build_network(n, batch=1) for n in ("resnet50", "inception_v4", "densenet121",
                                                  "vgg16", "gpt2")]
    rng = random.Random(0)
    for _ in range(200):
        n = rng.randint(1, 30)
        G = nx.DiGraph()
        G.add_nodes_from(range(n))
        G.add_edges_from((u, v) for u, v in ((rng.randrange(n), rng.randrange(n))
                                             for _ in range(rng.randint(0, 2 * n))) if u < v)
        graphs.append(G)
    for G in graphs:
        want = set(nx.articulation_points(G.to_undirected(as_view=True)))
        assert articulation_points(list(G), *adjacency(G)) == want
    assert sum(bool(articulation_points(list(G), *adjacency(G))) for G in graphs) > 100
