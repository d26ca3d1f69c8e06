// Package memtrim gives a quiet process's garbage back to the operating
// system. Go collects garbage only once the heap has grown by GOGC
// percent (100 by default) over what the last collection left, so a
// process that goes quiet after a burst keeps up to twice what it holds
// resident until the runtime's periodic collection, up to two minutes
// later, and its scavenger has returned the pages. A replica of elector
// holding 100,000 elections held about 150 MB and stayed at over 300 MiB
// resident after the campaigns that made them.
//
// Run watches the allocation rate and, once a check interval passes with
// almost nothing allocated while the heap holds much more than the last
// collection left, collects once and returns the freed pages
// (debug.FreeOSMemory). Under load it trims nothing: GOGC, and GOMEMLIMIT
// where one is set, govern as always.
//
// With a Floor, Run also keeps a small heap from being collected many
// times a second under load: GOGC is raised while the live heap is small,
// so that a collection waits until the heap reaches the Floor (see
// Config.Percent), and is put back as the live heap grows. GOGC set in
// the environment is left as it is.
package memtrim
