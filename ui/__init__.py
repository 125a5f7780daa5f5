"""Gatehouse front ends: the Streamlit app and the terminal client."""
