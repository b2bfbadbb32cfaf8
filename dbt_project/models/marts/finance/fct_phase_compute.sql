{{ compute_rollup(['batch_id', 'phase']) }}
