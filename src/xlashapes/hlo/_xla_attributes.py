"""The attributes XLA's parser (jaxlib 0.10.2) allows per opcode: it refuses any other ("unexpected attribute").

Read from XLA's own answers: each opcode was given an unknown attribute and XLA's message listed the allowed ones.

>>> "kind" in allowed_attributes("fusion"), "kind" in allowed_attributes("add"), allowed_attributes("foo") is None
(True, False, True)
"""

from __future__ import annotations

__all__ = ["COMMON_ATTRIBUTES", "allowed_attributes"]

COMMON_ATTRIBUTES = frozenset(('backend_config control-predecessors frontend_attributes metadata origin '
                             'parameter_replication sharding statistics').split())
"""Attributes every instruction may carry."""

_EXTRA = {
    'abs': '',
    'acos': 'result_accuracy',
    'acosh': 'result_accuracy',
    'add': '',
    'add-dependency': '',
    'after-all': '',
    'all-gather': 'channel_id constrain_layout dimensions replica_groups use_global_device_ids',
    'all-gather-done': '',
    'all-gather-start': 'channel_id constrain_layout dimensions replica_groups use_global_device_ids',
    'all-reduce': 'channel_id constrain_layout mode replica_groups to_apply use_global_device_ids',
    'all-reduce-done': '',
    'all-reduce-start': ('channel_id constrain_layout mode replica_groups to_apply '
                         'use_global_device_ids'),
    'all-to-all': 'channel_id constrain_layout dimensions replica_groups',
    'and': '',
    'asin': 'result_accuracy',
    'asinh': 'result_accuracy',
    'atan2': '',
    'atanh': 'result_accuracy',
    'batch-norm-grad': 'epsilon feature_index',
    'batch-norm-inference': 'epsilon feature_index',
    'batch-norm-training': 'epsilon feature_index',
    'bitcast': '',
    'bitcast-convert': '',
    'broadcast': 'dimensions',
    'call': 'is_composite to_apply',
    'cbrt': 'result_accuracy',
    'ceil': '',
    'cholesky': 'lower',
    'clamp': '',
    'collective-broadcast': 'channel_id replica_groups',
    'collective-permute': 'channel_id slice_sizes source_target_pairs',
    'collective-permute-done': '',
    'collective-permute-start': 'channel_id slice_sizes source_target_pairs',
    'compare': 'direction type',
    'complex': '',
    'concatenate': 'dimensions',
    'convert': '',
    'convolution': ('batch_group_count convolution_kind dim_labels feature_group_count '
                    'operand_precision sparsity_config window'),
    'copy': '',
    'copy-done': '',
    'copy-start': 'cross_program_prefetch_index',
    'cosh': 'result_accuracy',
    'cosine': 'result_accuracy',
    'count-leading-zeros': '',
    'custom-call': ('api_version batch_group_count called_computations custom_call_has_side_effect '
                    'custom_call_target dim_labels feature_group_count literal '
                    'operand_layout_constraints operand_precision output_to_operand_aliasing '
                    'padding_type schedule to_apply window'),
    'divide': '',
    'domain': 'domain',
    'dot': ('algorithm lhs_batch_dims lhs_contracting_dims operand_precision rhs_batch_dims '
            'rhs_contracting_dims'),
    'dynamic-reshape': '',
    'dynamic-slice': 'dynamic_slice_sizes',
    'dynamic-update-slice': '',
    'erf': 'result_accuracy',
    'exponential': 'result_accuracy',
    'exponential-minus-one': 'result_accuracy',
    'fft': 'fft_length fft_type',
    'floor': '',
    'fusion': 'calls kind output_to_operand_aliasing',
    'gather': ('collapsed_slice_dims index_vector_dim indices_are_sorted offset_dims '
               'operand_batching_dims slice_sizes start_index_map start_indices_batching_dims'),
    'get-dimension-size': 'dimensions',
    'get-tuple-element': 'index',
    'imag': '',
    'infeed': 'infeed_config',
    'iota': 'iota_dimension',
    'is-finite': '',
    'log': 'result_accuracy',
    'log-plus-one': 'result_accuracy',
    'logistic': 'result_accuracy',
    'map': 'dimensions to_apply',
    'maximum': '',
    'minimum': '',
    'mulhi': '',
    'multiply': '',
    'negate': '',
    'not': '',
    'opt-barrier': '',
    'or': '',
    'outfeed': 'outfeed_config outfeed_shape',
    'pad': 'padding',
    'partition-id': '',
    'popcnt': '',
    'power': '',
    'ragged-all-to-all': 'channel_id dimensions replica_groups',
    'ragged-dot': ('lhs_batch_dims lhs_contracting_dims lhs_ragged_dims operand_precision '
                   'rhs_batch_dims rhs_contracting_dims rhs_group_dims'),
    'real': '',
    'recv': 'channel_id is_host_transfer',
    'recv-done': 'channel_id is_host_transfer',
    'reduce': 'dimensions to_apply',
    'reduce-precision': 'exponent_bits mantissa_bits',
    'reduce-scatter': ('channel_id constrain_layout dimensions mode replica_groups to_apply '
                       'use_global_device_ids'),
    'reduce-window': 'to_apply window',
    'remainder': '',
    'replica-id': '',
    'reshape': 'inferred_dimension',
    'reverse': 'dimensions',
    'rng': 'distribution',
    'rng-bit-generator': 'algorithm',
    'rng-get-and-update-state': 'delta',
    'round-nearest-afz': '',
    'round-nearest-even': '',
    'rsqrt': 'result_accuracy',
    'scaled-dot': ('algorithm lhs_batch_dims lhs_contracting_dims operand_precision rhs_batch_dims '
                   'rhs_contracting_dims'),
    'scan': 'dimensions is_associative is_reverse num_carries to_apply',
    'scatter': ('index_vector_dim indices_are_sorted input_batching_dims inserted_window_dims '
                'scatter_dims_to_operand_dims scatter_indices_batching_dims to_apply unique_indices '
                'update_window_dims'),
    'select': '',
    'select-and-scatter': 'scatter select window',
    'send': 'channel_id is_host_transfer',
    'send-done': 'channel_id is_host_transfer',
    'set-dimension-size': 'dimensions',
    'shift-left': '',
    'shift-right-arithmetic': '',
    'shift-right-logical': '',
    'sign': '',
    'sine': 'result_accuracy',
    'sinh': 'result_accuracy',
    'slice': 'slice',
    'sort': 'dimensions is_stable to_apply',
    'sqrt': 'result_accuracy',
    'stochastic-convert': '',
    'subtract': '',
    'tan': 'result_accuracy',
    'tanh': 'result_accuracy',
    'topk': 'k largest',
    'transpose': 'dimensions',
    'triangular-solve': 'left_side lower transpose_a unit_diagonal',
    'while': 'body condition',
    'xor': '',
}

_ALLOWED = {opcode: COMMON_ATTRIBUTES | frozenset(extra.split()) for opcode, extra in _EXTRA.items()}


def allowed_attributes(opcode: str) -> frozenset[str] | None:
    """The attributes XLA allows on ``opcode`` (None for opcodes not in the table: async wrappers, constants ...)."""
    return _ALLOWED.get(opcode)
