/** One bar: its label and one value per series (in the order of `series`). */
export interface Bar {
  label: string
  values: number[]
}

/**
 * Stacked bars in plain SVG (no chart library): one bar per bucket, one colour per series, a tooltip per
 * segment. Scales to its box, so it fits a phone as well.
 */
export function StackedBars({
  bars,
  series,
  format,
}: {
  bars: Bar[]
  series: Array<{ name: string; color: string }>
  format: (v: number) => string
}) {
  const W = 720
  const H = 260
  const left = 64
  const bottom = 28
  const top = 8
  const plotH = H - top - bottom
  const max = Math.max(0, ...bars.map((b) => b.values.reduce((a, v) => a + v, 0)))
  const scale = max > 0 ? plotH / max : 0
  const step = bars.length ? (W - left) / bars.length : 0
  const barW = Math.max(1, step * 0.7)
  const labelEvery = Math.max(1, Math.ceil(bars.length / 12))
  const ticks = max > 0 ? [0, 0.25, 0.5, 0.75, 1].map((f) => f * max) : [0]
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label="stacked bars per bucket">
        {ticks.map((t) => {
          const y = top + plotH - t * scale
          return (
            <g key={t}>
              <line x1={left} x2={W} y1={y} y2={y} class="grid-line" />
              <text x={left - 6} y={y + 4} text-anchor="end" class="axis">
                {format(t)}
              </text>
            </g>
          )
        })}
        {bars.map((b, i) => {
          const x = left + i * step + (step - barW) / 2
          let y = top + plotH
          return (
            <g key={b.label} class="bar">
              {b.values.map((v, j) => {
                const h = v * scale
                y -= h
                return v > 0 ? (
                  <rect key={j} x={x} y={y} width={barW} height={h} fill={series[j].color}>
                    <title>
                      {b.label} · {series[j].name}: {format(v)}
                    </title>
                  </rect>
                ) : null
              })}
              {i % labelEvery === 0 && (
                <text x={x + barW / 2} y={H - 8} text-anchor="middle" class="axis">
                  {b.label}
                </text>
              )}
            </g>
          )
        })}
      </svg>
      <figcaption class="legend">
        {series.map((s) => (
          <span key={s.name}>
            <i style={{ background: s.color }} /> {s.name}
          </span>
        ))}
      </figcaption>
    </figure>
  )
}
