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

#: CHATML_JSON whose last assistant turn ends with the model's eos token, not <|im_end|>
CHATML_JSON_EOS_LAST = CHATML_JSON.replace(
    "{{- '<|im_end|>\\n' }}\n{%- elif m.role == 'tool' %}",
    "{{- '<|im_end|>\\n' if not loop.last else eos_token }}\n{%- elif m.role == 'tool' %}",
)
assert CHATML_JSON_EOS_LAST != CHATML_JSON

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

#: tagged parameters whose tag names the key, the value inline: <parameter=city>Paris</parameter>
KEY_NAMED_TAGS = TAGGED_XML.replace("'>\\n' + (v | string) + '\\n</parameter>\\n'", "'>' + (v | string) + '</parameter>\\n'")

#: tool results written inside the assistant's turn (<results>...</results>, no new header), a prompt that pre-closes <think></think>
RESULTS_IN_TURN = """{%- for m in messages %}
{%- if m.role == 'user' %}{{- '<U>' + m.content }}
{%- elif m.role == 'tool' %}{{- '<results>' + m.content + '</results>' }}
{%- elif m.role == 'assistant' %}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<A>' }}{%- endif %}
{{- '</think>' + (m.content or '') }}
{%- for tc in m.tool_calls or [] %}{{- '<call>' + {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson + '</call>' }}{%- endfor %}
{{- '<end>' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{%- if messages[-1].role != 'tool' %}{{- '<A>' }}{%- endif %}{{- '<think>' if enable_thinking else '<think></think>' }}{%- endif %}"""

#: ChatML JSON calls from a template that mutates a list it builds (list.append)
APPENDS_TO_LIST = CHATML_JSON.replace(
    "{%- for tc in m.tool_calls or [] %}",
    "{%- set seen = [] %}{%- for tc in m.tool_calls or [] %}{%- set _ = seen.append(tc.function.name) %}",
)

#: a generation prompt that opens the reasoning with a sentence; the answer after [BEGIN FINAL]
SENTENCE_OPENS_REASONING = """{%- if tools %}{{- '<|system|>\\nTools: ' + tools | tojson + '\\n' }}{%- endif %}
{%- for m in messages %}
{%- if m.role == 'assistant' %}{{- '<|assistant|>\\n' }}
{%- if m.reasoning_content %}{{- m.reasoning_content + '\\n[BEGIN FINAL]\\n' }}{%- endif %}
{{- m.content or '' }}
{%- if m.tool_calls %}{{- '\\n<calls>' + m.tool_calls | map(attribute='function') | list | tojson + '</calls>' }}{%- endif %}
{{- '\\n' }}
{%- else %}{{- '<|' + m.role + '|>\\n' + m.content + '\\n' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|assistant|>\\nMy reasoning:\\n' }}{%- endif %}"""

#: a system prompt asking for reasoning, then the answer in [BEGIN FINAL] ... [END FINAL]; no reasoning rendered
BEGIN_END_PROMPT = """{{- '<|system|>\\nReason step by step first; then write the answer as [BEGIN FINAL] ... [END FINAL].\\n<|end|>\\n' }}
{%- for m in messages %}{{- '<|' + m.role + '|>\\n' + (m.content or '') + '\\n<|end|>\\n' }}{%- endfor %}
{%- if add_generation_prompt %}{{- '<|assistant|>\\n' }}{%- endif %}"""

#: the generation prompt written whether or not it is asked for; reasoning rendered only next to calls
PROMPT_ALWAYS = """{%- if tools %}{{- '<|TURN|><|SYS|>Tools: ' + tools | tojson + '<|END_TURN|>' }}{%- endif %}
{%- for m in messages %}
{%- if m.role == 'user' %}{{- '<|TURN|><|USER|>' + m.content + '<|END_TURN|>' }}
{%- elif m.role == 'tool' %}{{- '<|TURN|><|TOOL|>' + m.content + '<|END_TURN|>' }}
{%- elif m.tool_calls %}{{- '<|TURN|><|BOT|><|THINK|>' + (m.reasoning_content or '') + '<|END_THINK|><|ACT|>' + m.tool_calls | map(attribute='function') | list | tojson + '<|END_ACT|><|END_TURN|>' }}
{%- else %}{{- '<|TURN|><|BOT|><|ANSWER|>' + m.content + '<|END_ANSWER|><|END_TURN|>' }}
{%- endif %}
{%- endfor %}
{{- '<|TURN|><|BOT|>' }}{%- if not enable_thinking %}{{- '<|THINK|><|END_THINK|>' }}{%- endif %}"""

#: arguments with bare keys and strings between <"|> delimiters: <call>NAME{city:<"|>Paris<"|>,days:3}</call>
LOOSE_JSON = chatml(
    "{{- '<call>' + tc.function.name + '{' }}"
    "{%- for k, v in tc.function.arguments.items() %}{%- if not loop.first %},{% endif %}"
    "{{- k + ':' + ('<\"|>' + v + '<\"|>' if v is string else v | string) }}{%- endfor %}{{- '}</call>' }}"
)

#: no call ever rendered; a system prompt (thinking kwarg) naming <think></think> and <response></response>, and with tools <|tool_call|> followed by a JSON list
DESCRIBED_CALLS = """{%- set sys = 'You are a helpful assistant.' %}
{%- if thinking %}{%- set sys = sys + ' Write your thoughts between <think></think> and your response between <response></response>.' %}{%- endif %}
{%- if tools %}{%- set sys = sys + ' To call a tool, reply with <|tool_call|> followed by a JSON list of calls.' %}{%- endif %}
{{- '<|role|>system<|sep|>' + sys + '<|eot|>\\n' }}
{%- if tools %}{{- '<|role|>tools<|sep|>' + tools | tojson + '<|eot|>\\n' }}{%- endif %}
{%- for m in messages %}{{- '<|role|>' + m.role + '<|sep|>' + (m.content or '') + '<|eot|>\\n' }}{%- endfor %}
{%- if add_generation_prompt %}{{- '<|role|>assistant<|sep|>' }}{%- endif %}"""

#: ChatML JSON calls; a branch the probes do not reach writes tool results inside the assistant's turn, closed by <tool_result|>
RESULTS_BRANCH = CHATML_JSON.replace(
    "{%- if m.content %}{{- m.content }}{%- endif %}",
    "{%- for r in m.tool_responses or [] %}{{- '<|tool_result>' + r | tojson + '<tool_result|>' }}{%- endfor %}{%- if m.content %}{{- m.content }}{%- endif %}",
)

#: a JSON list of objects keyed by the function name: <calls>[{"get_weather": {...}}]</calls>
KEYED_LIST = chatml(
    "{%- if loop.first %}{{- '<calls>[' }}{%- else %}{{- ', ' }}{%- endif %}"
    "{{- {tc.function.name: tc.function.arguments} | tojson }}{%- if loop.last %}{{- ']</calls>' }}{%- endif %}"
)

#: one JSON object per call after <|call|>, no close marker
OPEN_ONLY_JSON = chatml(
    "{{- '\\n<|call|> ' + {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson }}"
)

#: calls written for the OpenAI form, arguments as a JSON string (string concatenation raises on a dict)
STRING_ARGUMENTS = chatml(
    "{%- if not loop.first %}{{- '\\n' }}{%- endif %}"
    "{{- '<tool_call>\\n{\"name\": \"' + tc.function.name + '\", \"arguments\": ' + tc.function.arguments + '}\\n</tool_call>' }}"
)

#: every message opens with ">>>" and its recipient ("all" for content, else the function name);
#: the generation prompt writes the first ">>>"
RECIPIENT_MARKER = """{%- if tools %}{{- '<|start|>system\nTools: ' + tools | tojson + '<|eot|>' }}{%- endif %}
{%- for m in messages %}
{%- if m.role == 'assistant' %}{{- '<|start|>assistant\n' }}
{%- if m.content %}{{- '>>>all\n' + m.content }}{%- endif %}
{%- for tc in m.tool_calls or [] %}{{- '>>>' + tc.function.name + '\n' + tc.function.arguments | tojson }}{%- endfor %}
{{- '<|eot|>' }}
{%- else %}{{- '<|start|>' + m.role + '\n' + m.content + '<|eot|>' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start|>assistant\n>>>' }}{%- endif %}"""

#: a bare JSON call as the reply; a branch for built-in tools (never reached by the probes) writes
#: "<|python_tag|>" before the call
BARE_JSON_TAGGED_BRANCH = """{%- for m in messages %}{{- '<|hdr|>' + m.role + '<|/hdr|>\n' }}
{%- if m.tool_calls %}{%- if m.tool_calls | length > 1 %}{{- raise_exception('one call at a time') }}{%- endif %}
{%- set tool_call = m.tool_calls[0].function %}
{%- if builtin_tools is defined and tool_call.name in builtin_tools %}{{- '<|python_tag|>' + tool_call.name + '.call()' }}
{%- else %}{{- {'name': tool_call.name, 'parameters': tool_call.arguments} | tojson }}{%- endif %}
{%- else %}{{- m.content }}{%- endif %}{{- '<|eot|>' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|hdr|>assistant<|/hdr|>\n' }}{%- endif %}"""

#: Llama-3-style headers, bare JSON calls, and "Environment: ipython" in the system prompt
IPYTHON_ENV = """{%- if tools %}{{- '<|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nTools: ' + tools | tojson + '<|eot_id|>' }}{%- endif %}
{%- for m in messages %}
{{- '<|start_header_id|>' + m.role + '<|end_header_id|>\n\n' }}
{%- if m.tool_calls %}{%- set tc = m.tool_calls[0].function %}{{- {'name': tc.name, 'parameters': tc.arguments} | tojson }}
{%- else %}{{- m.content }}{%- endif %}{{- '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}"""

#: each call written as a turn of its own after the reply's end-of-turn marker
CALL_TURN = """{%- if tools %}{{- 'system<|sep|>\nTools: ' + tools | tojson + '<|end|>\n\n' }}{%- endif %}
{%- for m in messages %}
{%- if m.role == 'assistant' %}{{- 'assistant<|sep|>\n' + (m.content or '') }}
{%- for tc in m.tool_calls or [] %}{{- '<|end|>\n\nfunction call<|sep|>\n' + {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson }}{%- endfor %}
{{- '<|end|>\n\n' }}
{%- else %}{{- m.role + '<|sep|>\n' + m.content + '<|end|>\n\n' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- 'assistant<|sep|>\n' }}{%- endif %}"""

#: each call written inside the reply after <|call|>, while the system prompt says a turn of the
#: `function call` role writes it (a model may write either)
CALL_ROLE_DESCRIBED = """{{- 'system<|sep|>\nRoles: `user` asks; `assistant` answers; the function and its arguments are written next by the `function call` role.<|end|>\n\n' }}
{%- for m in messages %}
{%- if m.role == 'assistant' %}{{- 'assistant<|sep|>\n' + (m.content or '') }}
{%- for tc in (m.tool_calls or [])[:1] %}{{- '<|call|>' + {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson }}{%- endfor %}
{{- '<|end|>\n\n' }}
{%- else %}{{- m.role + '<|sep|>\n' + m.content + '<|end|>\n\n' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- 'assistant<|sep|>\n' }}{%- endif %}"""

#: JSON calls a line inside one section written once: <calls>\n{...}\n{...}\n</calls>
JSON_LINES_SECTION = chatml(
    "{%- if loop.first %}{{- '<calls>\\n' }}{%- endif %}"
    "{{- {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson + '\\n' }}"
    "{%- if loop.last %}{{- '</calls>' }}{%- endif %}"
)

#: Python calls a line (no list) inside one section: <calls>\nget_weather(city='Paris', days=3)\n</calls>
PYTHON_LINES_SECTION = chatml(
    "{%- if loop.first %}{{- '<calls>\\n' }}{%- endif %}"
    "{{- tc.function.name + '(' }}{%- for k, v in tc.function.arguments.items() %}"
    "{{- k + '=' + (v | tojson if v is not string else \"'\" + v + \"'\") }}{%- if not loop.last %}{{- ', ' }}{%- endif %}{%- endfor %}"
    "{{- ')\\n' }}{%- if loop.last %}{{- '</calls>' }}{%- endif %}"
)

#: no generation prompt (the user turn's "<|go|>" ends the prompt; thinking off adds an empty
#: <think></think>), and a plain "Bot: " the template writes before a content without calls
PLAIN_PREFIX_NO_GEN = """{%- if tools %}{{- 'system: ' + tools | tojson + '<|go|>' }}{%- endif %}
{%- for m in messages %}
{%- if m.role == 'assistant' %}
{%- if m.tool_calls %}{{- (m.content or '') + '<calls>' + m.tool_calls | map(attribute='function') | list | tojson + '</calls>' }}
{%- else %}{{- 'Bot: ' + m.content }}{%- endif %}{{- '<|eos|>' }}
{%- else %}{{- m.role + ': ' + m.content + '<|go|>' }}{%- endif %}
{%- endfor %}
{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\n\n</think>\n' }}{%- endif %}"""

#: reasoning never rendered; a system prompt (only for a kwarg the probes do not pass) names the
#: phrases the thoughts and the response come after
THOUGHT_PHRASES = """{%- if thinking is defined and thinking %}{{- '<|im_start|>system\nThink first. Write your thoughts after \\'Here is my reasoning:\\' and write your response after \\'Here is my answer:\\'.<|im_end|>\n' }}{%- endif %}
{%- for m in messages %}{{- '<|im_start|>' + m.role + '\n' + (m.content or '') + '<|im_end|>\n' }}{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"""

#: a marker written after the calls' section only (a content-only reply ends with nothing)
SECTION_THEN_STOP = """{%- for m in messages %}
{%- if m.role == 'assistant' %}{{- '<|bot|>' + (m.content or '') }}
{%- if m.tool_calls %}{{- '<calls>' }}{%- for tc in m.tool_calls %}{{- '<call>' + tc.function.name + '<sep>' + tc.function.arguments | tojson + '</call>' }}{%- endfor %}{{- '</calls><|stop|>' }}{%- endif %}
{%- else %}{{- '<|' + m.role + '|>' + m.content }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|bot|>' }}{%- endif %}"""

#: every block opens with the same marker the generation prompt starts with ("<|open|>"): one
#: assistant turn whose blocks (think, text) are not turns of their own
SHARED_OPEN = """{%- for m in messages %}{{- '<|open|>' + m.role + '<|sep|>' }}
{%- if m.role == 'assistant' %}
{%- if m.reasoning_content %}{{- '<|open|>think<|sep|>' + m.reasoning_content + '<|close|>' }}{%- endif %}
{{- '<|open|>text<|sep|>' + (m.content or '') }}
{%- for tc in m.tool_calls or [] %}{{- '<tool_call>' + {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson + '</tool_call>' }}{%- endfor %}
{%- else %}{{- m.content }}{%- endif %}{{- '<|end|>' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|open|>assistant<|sep|>' }}{%- endif %}"""

#: the function's name written twice, as the call's recipient and in its invoke tag
NAME_TWICE = chatml(
    "{{- '<call to=' + tc.function.name + '><invoke name=\"' + tc.function.name + '\">\n' }}"
    "{%- for k, v in tc.function.arguments.items() %}{{- '<arg name=\"' + k + '\">' + (v | string) + '</arg>\n' }}{%- endfor %}"
    "{{- '</invoke></call>' }}"
)

#: every turn closes with <|im_end|>; the assistant's adds a stop marker after it
STOP_AFTER_TURN_CLOSE = """{%- for m in messages %}{{- '<|im_start|>' + m.role + '\n' }}
{%- if m.role == 'assistant' %}{{- m.content or '' }}
{%- if m.tool_calls %}{{- '<calls>' + m.tool_calls | map(attribute='function') | list | tojson + '<|im_end|><|stop|>' }}
{%- else %}{{- '<|im_end|><|endofturn|>' }}{%- endif %}
{%- else %}{{- m.content + '<|im_end|>' }}{%- endif %}{{- '\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"""

#: reasoning rendered only from typed parts of a message's content (never from reasoning_content)
BLOCK_REASONING = """{%- for m in messages %}{{- '<|im_start|>' + m.role + '\n' }}
{%- if m.content is mapping %}{%- for part in m.content.parts %}
{%- if part.type == 'thinking' %}{{- '<reason>' + part.body + '</reason>' }}{%- elif part.type == 'text' %}{{- part.body }}{%- endif %}
{%- endfor %}{%- else %}{{- m.content or '' }}{%- endif %}
{%- for tc in m.tool_calls or [] %}{{- '<tool_call>' + {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson + '</tool_call>' }}{%- endfor %}
{{- '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"""

#: tools read from an ``xml_tools`` kwarg (as SmolLM3's template does), calls only described
XML_TOOLS_KWARG = """{%- if xml_tools %}{{- '<|im_start|>system\nTools: ' + xml_tools | tojson + '\nCall one as <tool_call>\n{"name": <name>, "arguments": <args>}\n</tool_call><|im_end|>\n' }}{%- endif %}
{%- for m in messages %}{{- '<|im_start|>' + m.role + '\n' + (m.content or '') + '<|im_end|>\n' }}{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"""

#: tags made of a marker, a name and a separator (<|o|>think<|s|> ... <|c|>think<|s|>), reasoning
#: pre-opened, a (possibly empty) answer block, then the calls with an index each
COMPOUND_TAGS = """{%- for m in messages %}{{- '<|o|>msg role="' + m.role + '"<|s|>' }}
{%- if m.role == 'assistant' %}
{{- (m.reasoning_content or '') + '<|c|>think<|s|><|o|>answer<|s|>' + (m.content or '') + '<|c|>answer<|s|>' }}
{%- if m.tool_calls %}{{- '<|o|>calls<|s|>' }}
{%- for tc in m.tool_calls %}{{- '<|o|>call fn="' + tc.function.name + '" n="' + loop.index | string + '"<|s|>' }}
{%- for k, v in tc.function.arguments.items() %}{{- '<|o|>arg key="' + k + '"<|s|>' + v | string + '<|c|>arg<|s|>' }}{%- endfor %}
{{- '<|c|>call<|s|>' }}{%- endfor %}{{- '<|c|>calls<|s|>' }}{%- endif %}
{%- else %}{{- m.content }}{%- endif %}{{- '<|c|>msg<|s|><|eom|>' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|o|>msg role="assistant"<|s|><|o|>think<|s|>' }}{%- endif %}"""

#: a Python call list whose string values the template writes bare ("%s" | format: city=Paris)
BARE_VALUES = """{%- for m in messages %}{{- '<|hdr|>' + m.role + '\n' }}
{%- if m.tool_calls %}{{- '[' }}{%- for tc in m.tool_calls %}{{- tc.function.name + '(' }}
{%- for k, v in tc.function.arguments.items() %}{{- k + '=' + '%s' | format(v) }}{%- if not loop.last %}{{- ', ' }}{%- endif %}{%- endfor %}
{{- ')' }}{%- if not loop.last %}{{- ', ' }}{%- endif %}{%- endfor %}{{- ']' }}
{%- else %}{{- m.content }}{%- endif %}{{- '<|eot|>' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|hdr|>assistant\n' }}{%- endif %}"""

#: special tokens built from one suffix variable ('<call{}>'.format(TK)), which other models of
#: the family write with another value of it (none)
SUFFIXED_TOKENS = """{%- set TK = ':v2' %}
{%- set bot = '<bot{}>'.format(TK) %}{%- set eot = '<eot{}>'.format(TK) %}{%- set usr = '<user{}>'.format(TK) %}
{%- set call_open = '<call{}>'.format(TK) %}{%- set call_close = '</call{}>'.format(TK) %}
{%- for m in messages %}
{%- if m.role == 'assistant' %}{{- bot + (m.content or '') }}
{%- for tc in m.tool_calls or [] %}{{- call_open + {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson + call_close }}{%- endfor %}
{{- eot }}
{%- else %}{{- usr + m.content + eot }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- bot }}{%- endif %}"""

#: reasoning, content and each call as messages of their own in one reply, each opened by the
#: generation prompt's "<|start|>assistant" again
CHANNEL_MESSAGES = """{%- for m in messages %}
{%- if m.role == 'assistant' %}
{%- if m.reasoning_content %}{{- '<|start|>assistant to=self<|msg|>' + m.reasoning_content + '<|eom|>' }}{%- endif %}
{%- if m.content %}{{- '<|start|>assistant to=user<|msg|>' + m.content + ('<|eom|>' if m.tool_calls else '<|eot|>') }}{%- endif %}
{%- for tc in m.tool_calls or [] %}{{- '<|start|>assistant to=' + tc.function.name + '<|msg|><invoke name="' + tc.function.name + '">\n' }}
{%- for k, v in tc.function.arguments.items() %}{{- '<p name="' + k + '">' + v | string + '</p>\n' }}{%- endfor %}
{{- '</invoke>' + ('<|eot|>' if loop.last else '<|eom|>') }}{%- endfor %}
{%- else %}{{- '<|start|>' + m.role + '<|msg|>' + m.content + '<|eot|>' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|start|>assistant' }}{%- endif %}"""

#: an instruction turn of another role written after the last message of every render (as Cohere's
#: command-r-plus template does), before the generation prompt
INSTRUCTIONS_LAST = """{%- for m in messages %}{{- '<|TURN|><|' + ('CHATBOT' if m.role == 'assistant' else m.role | upper) + '|>' + (m.content or '') }}
{%- for tc in m.tool_calls or [] %}{{- '<call>' + {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson + '</call>' }}{%- endfor %}
{{- '<|END|>' }}{%- endfor %}
{{- '<|TURN|><|SYSTEM|>Answer briefly.<|END|>' }}
{%- if add_generation_prompt %}{{- '<|TURN|><|CHATBOT|>' }}{%- endif %}"""

#: the formats ``respc.infer`` reads beyond the first kinds (tests/test_infer.py, one test each)
MORE = {
    "key_named_tags": KEY_NAMED_TAGS,
    "results_in_turn": RESULTS_IN_TURN,
    "appends_to_list": APPENDS_TO_LIST,
    "sentence_opens_reasoning": SENTENCE_OPENS_REASONING,
    "begin_end_prompt": BEGIN_END_PROMPT,
    "prompt_always": PROMPT_ALWAYS,
    "loose_json": LOOSE_JSON,
    "described_calls": DESCRIBED_CALLS,
    "results_branch": RESULTS_BRANCH,
    "keyed_list": KEYED_LIST,
    "open_only_json": OPEN_ONLY_JSON,
    "string_arguments": STRING_ARGUMENTS,
    "recipient_marker": RECIPIENT_MARKER,
    "bare_json_tagged_branch": BARE_JSON_TAGGED_BRANCH,
    "call_turn": CALL_TURN,
    "ipython_env": IPYTHON_ENV,
    "call_role_described": CALL_ROLE_DESCRIBED,
    "json_lines_section": JSON_LINES_SECTION,
    "python_lines_section": PYTHON_LINES_SECTION,
    "action_repr": ACTION_REPR,
    "plain_prefix_no_gen": PLAIN_PREFIX_NO_GEN,
    "thought_phrases": THOUGHT_PHRASES,
    "section_then_stop": SECTION_THEN_STOP,
    "shared_open": SHARED_OPEN,
    "name_twice": NAME_TWICE,
    "stop_after_turn_close": STOP_AFTER_TURN_CLOSE,
    "block_reasoning": BLOCK_REASONING,
    "xml_tools_kwarg": XML_TOOLS_KWARG,
    "compound_tags": COMPOUND_TAGS,
    "bare_values": BARE_VALUES,
    "suffixed_tokens": SUFFIXED_TOKENS,
    "channel_messages": CHANNEL_MESSAGES,
    "instructions_last": INSTRUCTIONS_LAST,
}

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
