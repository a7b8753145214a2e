//go:build memkitdebug

package buffer

// debug turns on the checks that cost more than a release build should pay:
// every Buffer method panics when called after Free or Close, and neither
// Pool nor FixedPool ever reuses a Buffer header, so a stale *Buffer stays
// detectably dead.
const debug = true
