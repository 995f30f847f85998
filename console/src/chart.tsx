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
    const bars = uPlot.paths.bars!({ size: [0.7, 40], align: 0 });
    const plot = new uPlot(
      {
        width: Math.max(280, Math.min(el.clientWidth || 560, 720)),
        height,
        legend: { show: true },
        cursor: { show: false },
        scales: { x: { time: false, range: [-0.5, Math.max(labels.length - 0.5, 0.5)] }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [
          { values: (_u, splits) => splits.map((s) => labels[Math.round(s)] ?? ''), splits: () => xs, stroke: '#333', grid: { show: false } },
          { stroke: '#333', grid: { stroke: '#ddd' } },
        ],
        series: [{}, ...series.map((s) => ({ label: s.label, fill: s.color, stroke: s.color, paths: bars, points: { show: false } }))],
      },
      [xs, ...series.map((s) => s.values)],
      el,
    );
    return () => plot.destroy();
  }, [JSON.stringify({ labels, series }), height]);
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={ref} role="img" aria-label={`${title}: ${series.map((s) => `${s.label} ${s.values.reduce((a, b) => a + b, 0)}`).join(', ')}`} />
    </figure>
  );
}
