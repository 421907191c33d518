// Command clusterbench measures what the Redis cluster tier saves: four
// simulated nodes, each with its own local cache file and its own client,
// share one redis-server. It prints a Markdown table.
//
//   - Staggered start: node 1 selects algorithms for every shape cold (each
//     selection is a simulated cuDNN benchmark, a sleep); then nodes 2 to 4
//     start with empty files and find node 1's results in Redis.
//   - Simultaneous start: all four start cold at once; the cluster lock
//     makes one node benchmark each shape while the others wait for it.
//   - Local hits: the cost of a hit with the tier enabled against the same
//     hit without it, and the number of commands Redis ran meanwhile (read
//     from INFO commandstats): it must be zero.
//
// Each scenario runs with the server on loopback and behind a proxy that
// adds a round-trip delay (-rtt), as a data-centre network would.
//
// With -v8 BUILD, two nodes of PyTorch's default-path sequence (the real
// cudnn_frontend on the stand-in cuDNN: BUILD/tests/v8fe/torch_like under
// BUILD/convcache run, each node its own file) start together, on Redis
// reached directly, behind a proxy that delivers every reply 200 ms late,
// and with Redis down; the table says how many graphs both benchmarked and
// the longest lookup.
//
// Usage: clusterbench [-shapes 200] [-bench-ms 20] [-rtt 1ms] [-mac=true] [-url redis://...] [-v8 BUILD]
package main
