// DOT export through boost::write_graphviz.
#include "sim/check/dot.hpp"

#include <sstream>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>

namespace kvcheck::sim {

std::string counterexample_dot(const Counterexample& c) {
    struct Vertex {
        std::string label;
        std::string color;
    };
    struct Edge {
        std::string label;
    };
    using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, Vertex, Edge>;
    Graph g;
    std::vector<Graph::vertex_descriptor> states;
    for (std::size_t i = 0; i <= c.described.size(); ++i)
        states.push_back(boost::add_vertex(Vertex{"state " + std::to_string(i), "black"}, g));
    if (!c.violations.empty()) {
        std::string label = "state " + std::to_string(c.described.size());
        for (const model::Violation& v : c.violations) label += "\\n" + v.invariant;
        g[states.back()] = Vertex{label, "red"};
    }
    for (std::size_t i = 0; i < c.described.size(); ++i)
        boost::add_edge(states[i], states[i + 1], Edge{std::to_string(i + 1) + ". " + c.described[i]}, g);
    std::ostringstream out;
    boost::write_graphviz(
        out, g,
        [&](std::ostream& o, Graph::vertex_descriptor v) {
            o << "[label=\"" << g[v].label << "\", color=\"" << g[v].color << "\"]";
        },
        [&](std::ostream& o, Graph::edge_descriptor e) { o << "[label=\"" << g[e].label << "\"]"; });
    return out.str();
}

}  // namespace kvcheck::sim
