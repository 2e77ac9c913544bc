"""asyncio the same way on 3.6 to 3.15, for the task targets (tasks, taskcycle, hostile).

Tasks have names from 3.8 only. A target gives each task it makes a label: from 3.8 the label is
the task's name; before, tasks have none (pytop reports null, the truth), and the label, kept
here by the task's id, is how the target and the checks tell its tasks apart in what it reports.
"""
import asyncio
import os
import sys

NAMED = sys.version_info >= (3, 8)
LABELS = {}  # before 3.8: id(task) -> label
KEEP = []    # before 3.8: every labelled task, so that no id is reused


def create_task(coro, label, loop=None):
    """A task of CORO on LOOP (the running loop when None), named LABEL where tasks have names."""
    loop = loop or get_running_loop()
    if NAMED:
        return loop.create_task(coro, name=label)
    task = loop.create_task(coro)
    LABELS[id(task)] = label
    KEEP.append(task)
    return task


def name(task):
    """The task's name; None before 3.8 (tasks had none)."""
    return task.get_name() if NAMED else None


def label(task):
    """What the target called TASK: its name, or before 3.8 the label it was made with (None for
    a task it did not make itself, such as the one running a loop's main coroutine)."""
    return task.get_name() if NAMED else LABELS.get(id(task))


def coro_function(task):
    """The function name of the coroutine TASK runs, as pytop names a frame's function
    (co_qualname from 3.11, co_name before)."""
    code = task._coro.cr_code
    return getattr(code, "co_qualname", code.co_name)


def get_running_loop():
    if hasattr(asyncio, "get_running_loop"):
        return asyncio.get_running_loop()
    return asyncio.get_event_loop()  # 3.6: the running loop, inside a coroutine


def current_task():
    if hasattr(asyncio, "current_task"):
        return asyncio.current_task()
    return asyncio.Task.current_task()


def all_tasks():
    """The running loop's tasks, of every implementation the target uses. 3.6 keeps C tasks and
    pure-Python ones (_PyTask) in two registries; from 3.14 asyncio.all_tasks() no longer sees
    the pure-Python ones, which _py_all_tasks() reads."""
    if not hasattr(asyncio, "all_tasks"):
        loop = get_running_loop()
        return set(asyncio.Task.all_tasks(loop)) | set(asyncio.tasks._PyTask.all_tasks(loop))
    tasks = set(asyncio.all_tasks())
    py_all = getattr(asyncio.tasks, "_py_all_tasks", None)
    if sys.version_info >= (3, 14) and py_all is not None:
        tasks |= py_all()
    return tasks


def run(main):
    """asyncio.run(MAIN) (3.7+); before, a new loop of this thread runs it to completion."""
    if hasattr(asyncio, "run"):
        return asyncio.run(main)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    return loop.run_until_complete(main)


def native_id():
    """The kernel's id of the calling thread (threading.get_native_id(), 3.8+)."""
    return int(os.readlink("/proc/thread-self").rsplit("/", 1)[-1])
