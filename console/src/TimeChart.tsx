import { useEffect, useRef } from 'preact/hooks'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'

/** One line (or bar series) of a chart: a value per point, null where nothing was measured. */
export interface ChartSeries {
  label: string
  values: Array<number | null>
  color: string
}

/**
 * A time chart drawn by uPlot (canvas, small and fast) that follows its box's width, so it fits a phone.
 * `bars` draws counts per interval as bars; otherwise lines with points. When every value is zero or
 * missing it shows `empty` instead of a flat line.
 */
export function TimeChart({
  title,
  times,
  series,
  unit,
  bars = false,
  empty,
}: {
  title: string
  times: number[]
  series: ChartSeries[]
  unit?: string
  bars?: boolean
  empty: string
}) {
  const box = useRef<HTMLDivElement>(null)
  const hasData = series.some((s) => s.values.some((v) => v !== null && v !== 0))
  useEffect(() => {
    const el = box.current
    if (!el || !hasData) return
    const fmt = (v: number | null) =>
      v === null || v === undefined
        ? '—'
        : unit === 'ms'
          ? ms(v)
          : `${Number.isInteger(v) ? v : v.toFixed(2)}${unit ? ` ${unit}` : ''}`
    const barPaths = bars ? uPlot.paths.bars!({ size: [0.8, 40], gap: 1 }) : undefined
    const opts: uPlot.Options = {
      width: Math.max(240, el.clientWidth),
      height: 200,
      legend: { live: true },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        { stroke: '#667085', grid: { stroke: '#eef0f4' } },
        {
          stroke: '#667085',
          grid: { stroke: '#eef0f4' },
          size: 64,
          // Counts tick on whole numbers.
          incrs: bars ? [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 100_000] : undefined,
          values: (_u, ticks) => ticks.map((t) => (unit === 'ms' ? ms(t) : unit ? `${t} ${unit}` : String(t))),
        },
      ],
      series: [
        {},
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: bars ? 0 : 2,
          fill: bars ? s.color : undefined,
          paths: barPaths,
          points: { show: !bars, size: 4 },
          spanGaps: false,
          value: (_u: uPlot, v: number | null) => fmt(v),
        })),
      ],
    }
    const data: uPlot.AlignedData = [
      times.map((t) => t / 1000),
      ...series.map((s) => s.values.map((v) => (v === null ? null : v))),
    ]
    const plot = new uPlot(opts, data, el)
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(240, el.clientWidth), height: 200 }))
    resize.observe(el)
    return () => {
      resize.disconnect()
      plot.destroy()
    }
  }, [hasData, times, series, unit, bars])
  return (
    <figure class="chart time-chart" data-chart={title}>
      <figcaption class="chart-title">{title}</figcaption>
      {hasData ? <div ref={box} class="plot" /> : <p class="empty chart-empty">{empty}</p>}
    </figure>
  )
}

/** Milliseconds for people: `850 ms`, `2.5 s`, `3 min`. */
function ms(v: number): string {
  if (v < 1000) return `${Math.round(v)} ms`
  if (v < 60_000) return `${+(v / 1000).toFixed(1)} s`
  return `${+(v / 60_000).toFixed(1)} min`
}
