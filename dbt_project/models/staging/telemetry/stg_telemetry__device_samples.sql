-- The three telemetry formats in one shape: the wide CSV/Parquet, dcgm-exporter scrapes and Prometheus range
-- queries (the last two pivoted to one row per GPU and instant when loaded). Their files have different names, so
-- (source_file, source_line) still names one sample.
with source as (
    select * from {{ source('raw', 'device_samples') }}
    union all
    select * from {{ source('raw', 'device_samples_dcgm') }}
    union all
    select * from {{ source('raw', 'device_samples_prometheus') }}
),

renamed as (
    select
        {{ adapter.quote("timestamp") }} as sampled_at,
        -- The cluster the host is in (null: the telemetry names none): gpu-01 of two clusters is two hosts, and a
        -- sample with a cluster is only its cluster's jobs' (or those of jobs without one).
        cluster,
        -- One host under every name it goes by (a sample delivered again under node-01.cluster.example is node-01's
        -- again, not another GPU's); the name as the file spelled it chooses a host chunk (macros/host_chunks.sql).
        {{ short_host('hostname') }} as hostname,
        hostname as reported_hostname,
        gpu as gpu_index,
        -- A MIG instance of the GPU and its profile (docs/fractional_gpus.md); null: the whole GPU.
        gpu_instance_id,
        gpu_instance_profile,
        job_id,
        {{ adapter.quote("DCGM_FI_PROF_GR_ENGINE_ACTIVE") }} as gr_engine_active,
        {{ adapter.quote("DCGM_FI_PROF_SM_ACTIVE") }} as sm_active,
        {{ adapter.quote("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE") }} as tensor_active,
        {{ adapter.quote("DCGM_FI_PROF_NVLINK_TX_BYTES") }} as nvlink_tx_bytes_per_second,
        {{ adapter.quote("DCGM_FI_PROF_NVLINK_RX_BYTES") }} as nvlink_rx_bytes_per_second,
        {{ adapter.quote("DCGM_FI_DEV_POWER_USAGE") }} as power_watts,
        {{ adapter.quote("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") }} as energy_counter_mj,
        source_file,
        source_line
    from source
)

select * from renamed
