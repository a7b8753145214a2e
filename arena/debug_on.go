//go:build memkitdebug

package arena

// debug is set by the memkitdebug build tag: memory is poisoned when an
// arena is reset or freed, and checked when it is handed out again.
const debug = true
