"""Small chat templates written for these tests, one per format kind (not any model's own text).

Each renders a ChatML-like or bracketed conversation the way a model's chat template would:
a system block listing the tools, the turns, the assistant's reasoning and tool calls in its
format, and the generation prompt."""

_TURNS = """{%- for m in messages %}
{%- if m.role == 'assistant' %}
{{- '<|im_start|>assistant\\n' }}
{%- if m.reasoning_content %}{{- '<think>\\n' + m.reasoning_content + '\\n</think>\\n\\n' }}{%- endif %}
{%- if m.content %}{{- m.content }}{%- endif %}
{%- for tc in m.tool_calls or [] %}
{%- if loop.first and m.content %}{{- '\\n' }}{%- endif %}
CALL_BLOCK
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif m.role == 'tool' %}
{{- '<|im_start|>user\\n<tool_response>\\n' + m.content + '\\n</tool_response><|im_end|>\\n' }}
{%- else %}
{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}GEN_TAIL{%- endif %}"""

_SYSTEM = """{%- if tools %}
{{- '<|im_start|>system\\nYou can call these tools:\\n' }}
{%- for t in tools %}{{- t | tojson }}{{- '\\n' }}{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- endif %}
"""


def chatml(call_block: str, gen_tail: str = "") -> str:
    return _SYSTEM + _TURNS.replace("CALL_BLOCK", call_block).replace("GEN_TAIL", gen_tail)


#: ChatML with Hermes-style calls: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
CHATML_JSON = chatml(
    "{%- if not loop.first %}{{- '\\n' }}{%- endif %}"
    "{{- '<tool_call>\\n' + {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson + '\\n</tool_call>' }}"
)

#: tagged parameters: <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>
TAGGED_XML = chatml(
    "{%- if not loop.first %}{{- '\\n' }}{%- endif %}"
    "{{- '<tool_call>\\n<function=' + tc.function.name + '>\\n' }}"
    "{%- for k, v in tc.function.arguments.items() %}"
    "{{- '<parameter=' + k + '>\\n' + (v | string) + '\\n</parameter>\\n' }}"
    "{%- endfor %}{{- '</function>\\n</tool_call>' }}"
)

#: a reasoning model whose generation prompt pre-opens <think>
PREOPEN_THINK = chatml(
    "{%- if not loop.first %}{{- '\\n' }}{%- endif %}"
    "{{- '<tool_call>\\n' + {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson + '\\n</tool_call>' }}",
    gen_tail="{{- '<think>\\n' }}",
).replace(
    "{%- if m.reasoning_content %}{{- '<think>\\n' + m.reasoning_content + '\\n</think>\\n\\n' }}{%- endif %}",
    "{{- '<think>\\n' + (m.reasoning_content or '') + '\\n</think>\\n\\n' }}",
)

#: a reasoning model whose prompt pre-opens <think> and whose history drops the reasoning
DROPS_REASONING = PREOPEN_THINK.replace(
    "{{- '<think>\\n' + (m.reasoning_content or '') + '\\n</think>\\n\\n' }}", ""
)

#: no tool support: tool calls are never rendered, tools are ignored
NO_TOOLS = """{%- for m in messages %}{{- '<|im_start|>' + m.role + '\\n' + (m.content or '') + '<|im_end|>\\n' }}{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"""

#: raises when given tools
RAISES_ON_TOOLS = "{%- if tools %}{{- raise_exception('This model does not support tools') }}{%- endif %}\n" + NO_TOOLS

# A bracketed format with one JSON list of calls carrying ids, after a marker:
#   [ASSISTANT]text[CALLS][{"name": ..., "arguments": {...}, "id": "..."}, ...]</s>
JSON_LIST_IDS = """{{- bos_token }}
{%- if tools %}{{- '[TOOLS]' + tools | tojson + '[/TOOLS]' }}{%- endif %}
{%- for m in messages %}
{%- if m.role == 'user' %}{{- '[USER]' + m.content + '[/USER]' }}
{%- elif m.role == 'tool' %}{{- '[RESULT]' + m.content + '[/RESULT]' }}
{%- elif m.role == 'assistant' %}
{{- '[ASSISTANT]' }}{%- if m.content %}{{- m.content }}{%- endif %}
{%- if m.tool_calls %}{{- '[CALLS][' }}
{%- for tc in m.tool_calls %}{%- if not loop.first %}{{- ', ' }}{%- endif %}
{{- {'name': tc.function.name, 'arguments': tc.function.arguments, 'id': tc.id} | tojson }}
{%- endfor %}{{- ']' }}{%- endif %}
{{- eos_token }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '[ASSISTANT]' }}{%- endif %}"""

# Pythonic calls: a Python list of calls as the whole reply
#   <|header|>assistant\n[get_weather(city="Paris", days=3), get_time(timezone="UTC")]<|eot|>
PYTHONIC = """{%- if tools %}{{- '<|header|>system\\nTools:\\n' }}{%- for t in tools %}{{- t | tojson + '\\n' }}{%- endfor %}{{- '<|eot|>' }}{%- endif %}
{%- for m in messages %}
{%- if m.role == 'assistant' %}{{- '<|header|>assistant\\n' }}
{%- if m.tool_calls %}{{- '[' }}{%- for tc in m.tool_calls %}{%- if not loop.first %}{{- ', ' }}{%- endif %}
{{- tc.function.name + '(' }}{%- for k, v in tc.function.arguments.items() %}{%- if not loop.first %}{{- ', ' }}{%- endif %}{{- k + '=' + (v | tojson) }}{%- endfor %}{{- ')' }}
{%- endfor %}{{- ']' }}{%- else %}{{- m.content }}{%- endif %}{{- '<|eot|>' }}
{%- else %}{{- '<|header|>' + m.role + '\\n' + m.content + '<|eot|>' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|header|>assistant\\n' }}{%- endif %}"""

#: ChatML JSON calls whose assistant turns start with a fixed text the template writes itself
#: (the model is to write it too): 'Reply: ' + content
PREFIXED_CONTENT = CHATML_JSON.replace(
    "{%- if m.content %}{{- m.content }}{%- endif %}", "{%- if m.content %}{{- 'Reply: ' + m.content }}{%- endif %}"
)

#: calls after an action marker, the arguments written with jinja's |string (a Python dict's
#: repr, {'city': 'Paris'}), where the model writes JSON; no reasoning
ACTION_REPR = """{%- if tools %}{{- '<|im_start|>system name=<|plugin|>\\n' + tools | tojson + '<|im_end|>\\n' }}{%- endif %}
{%- for m in messages %}
{%- if m.role == 'assistant' %}{{- '<|im_start|>assistant\\n' + (m.content or '') }}
{%- for tc in m.tool_calls or [] %}{{- '<|action_start|><|plugin|>\\n{"name": "' + tc.function.name + '", "arguments": ' + (tc.function.arguments | string) + '}<|action_end|>' }}{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif m.role == 'tool' %}{{- '<|im_start|>environment name=<|plugin|>\\n' + m.content + '<|im_end|>\\n' }}
{%- else %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"""

#: header turns with a Python call list written after the content (the model writes the list
#: as its whole reply): <|header_start|>assistant<|header_end|>\\n\\nText[f(a=1)]<|eot|>
HEADER_PYTHONIC = """{%- if tools %}{{- '<|header_start|>system<|header_end|>\\n\\nCall tools as [name(key=value)]:\\n' }}{%- for t in tools %}{{- t | tojson + '\\n' }}{%- endfor %}{{- '<|eot|>' }}{%- endif %}
{%- for m in messages %}
{%- if m.role == 'assistant' %}{{- '<|header_start|>assistant<|header_end|>\\n\\n' + (m.content or '') }}
{%- if m.tool_calls %}{{- '[' }}{%- for tc in m.tool_calls %}{%- if not loop.first %}{{- ', ' }}{%- endif %}
{{- tc.function.name + '(' }}{%- for k, v in tc.function.arguments.items() %}{%- if not loop.first %}{{- ', ' }}{%- endif %}{{- k + '=' + (v | tojson) }}{%- endfor %}{{- ')' }}
{%- endfor %}{{- ']' }}{%- endif %}{{- '<|eot|>' }}
{%- elif m.role == 'tool' %}{{- '<|header_start|>ipython<|header_end|>\\n\\n' + m.content + '<|eot|>' }}
{%- else %}{{- '<|header_start|>' + m.role + '<|header_end|>\\n\\n' + m.content + '<|eot|>' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|header_start|>assistant<|header_end|>\\n\\n' }}{%- endif %}"""

ALL = {
    "chatml_json": CHATML_JSON,
    "tagged_xml": TAGGED_XML,
    "preopen_think": PREOPEN_THINK,
    "drops_reasoning": DROPS_REASONING,
    "no_tools": NO_TOOLS,
    "raises_on_tools": RAISES_ON_TOOLS,
    "json_list_ids": JSON_LIST_IDS,
    "pythonic": PYTHONIC,
}
