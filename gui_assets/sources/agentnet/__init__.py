"""AgentNet (`xlangai/AgentNet`): human desktop demonstrations as PyAutoGUI code, parsed
with ast (`pyautogui_code`), with a task_id hash holdout.

`source.py` declares it, `adapter.py` reads it, `demo.py` writes its demo mirror."""
