#!/usr/bin/env node
import { main } from '../dist/cli/main.js'

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code
    // Everything was stopped in order; a handle something forgot to close must not keep the process alive.
    setTimeout(() => process.exit(), 3000).unref()
  },
  (err) => {
    console.error(err instanceof Error ? err.message : err)
    process.exit(1)
  },
)
