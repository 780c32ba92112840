/**
 * The live progress line on stderr: `\r`-updated twice a second on a TTY, one line every 5 s
 * otherwise (CI logs). Shows the scenario, the elapsed time and what `status()` returns (the
 * current rate).
 */
export class Progress {
  private timer: NodeJS.Timeout | undefined
  private scenario = ''
  private started = 0
  private status: () => string = () => ''
  private lastLength = 0
  private readonly tty: boolean
  private readonly out: NodeJS.WriteStream

  constructor(out: NodeJS.WriteStream = process.stderr) {
    this.out = out
    this.tty = Boolean(out.isTTY)
  }

  start(scenario: string, status: () => string): void {
    this.stop()
    this.scenario = scenario
    this.started = performance.now()
    this.status = status
    this.timer = setInterval(() => this.draw(), this.tty ? 500 : 5000)
    this.timer.unref()
    if (this.tty) this.draw()
  }

  /** Swap what the line shows without restarting the clock (e.g. sending → draining). */
  update(status: () => string): void {
    this.status = status
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
    if (this.tty && this.lastLength > 0) this.out.write(`\r${' '.repeat(this.lastLength)}\r`)
    this.lastLength = 0
  }

  /** A line of its own (clears the progress line first). */
  log(line: string): void {
    if (this.tty && this.lastLength > 0) this.out.write(`\r${' '.repeat(this.lastLength)}\r`)
    this.lastLength = 0
    this.out.write(line + '\n')
    if (this.timer && this.tty) this.draw()
  }

  private draw(): void {
    const elapsed = ((performance.now() - this.started) / 1000).toFixed(1)
    let line = `[${this.scenario}] ${elapsed}s ${this.status()}`
    const width = this.out.columns ?? 120
    if (this.tty) {
      if (line.length > width - 1) line = line.slice(0, width - 1)
      this.out.write(`\r${line}${' '.repeat(Math.max(0, this.lastLength - line.length))}`)
      this.lastLength = line.length
    } else {
      this.out.write(line + '\n')
    }
  }
}
