// A small bar chart with uPlot (series of counts over categories or hours). Counts only: amounts are
// decimal strings of base units and are shown in tables, never converted to floating point.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface Series {
  label: string;
  values: number[];
  color: string;
}

export function BarChart({ title, labels, series, height = 180 }: { title: string; labels: string[]; series: Series[]; height?: number }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const xs = labels.map((_, i) => i);
    // Side by side: each series takes its share of the slot (align -1 / 1 for two series).
    const n = series.length;
    const barsOf = (i: number) => uPlot.paths.bars!({ size: [n > 1 ? 0.4 : 0.7, 40], align: n === 2 ? (i === 0 ? -1 : 1) : 0 });
    const rotate = labels.some((l) => l.length > 6) && labels.length > 3;
    const plot = new uPlot(
      {
        width: Math.max(280, Math.min(el.clientWidth || 560, 720)),
        height,
        legend: { show: false },
        cursor: { show: false },
        scales: { x: { time: false, range: [-0.5, Math.max(labels.length - 0.5, 0.5)] }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [
          {
            values: (_u, splits) => splits.map((s) => labels[Math.round(s)] ?? ''),
            splits: () => xs,
            stroke: '#333',
            grid: { show: false },
            ...(rotate ? { rotate: -35, size: 90 } : {}),
          },
          { stroke: '#333', grid: { stroke: '#ddd' } },
        ],
        series: [{}, ...series.map((s, i) => ({ label: s.label, fill: s.color, stroke: s.color, paths: barsOf(i), points: { show: false } }))],
      },
      [xs, ...series.map((s) => s.values)],
      el,
    );
    return () => plot.destroy();
  }, [JSON.stringify({ labels, series }), height]);
  return (
    <figure class="chart">
      <figcaption>
        {title}
        {series.length > 1 &&
          series.map((s) => (
            <span class="key">
              <span class="swatch" style={{ background: s.color }} aria-hidden="true" /> {s.label}
            </span>
          ))}
      </figcaption>
      <div ref={ref} role="img" aria-label={`${title}: ${series.map((s) => `${s.label} ${s.values.reduce((a, b) => a + b, 0)}`).join(', ')}`} />
    </figure>
  );
}
